/**
 * The account rate limit while a caller stalls the ingress's event loop (ADR 0034): the limiter
 * waits for its counter however late the answer is read, so a burst arriving around a stall is
 * admitted up to the limit and no further. Before ADR 0034 a 200 ms timer fired at the end of each
 * stall and admitted a whole window uncounted.
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';

import { createTestApp, type TestApp } from '../../helpers/app-fixture';
import { bearerToken } from '../../helpers/http-client';
import { parseExposition, sampleSum } from '../../helpers/metrics';

const LIMIT = 300;
const BURST = 2 * LIMIT;

/** Blocks this process's event loop, as a decompression bomb or a large body would. */
function stall(ms: number): void {
  const end = Date.now() + ms;
  while (Date.now() < end) {
    // busy: no timer, no socket is served meanwhile
  }
}

describe('Per-account rate limit while the event loop stalls', () => {
  let subject: TestApp;
  let server: Server;
  let baseUrl: string;

  beforeAll(async () => {
    subject = await createTestApp({ RATE_LIMIT_PER_ACCOUNT: String(LIMIT), RATE_LIMIT_WINDOW_SECONDS: '60' });
    server = createServer(subject.app);
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    baseUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });
  afterAll(async () => {
    server.closeAllConnections();
    await new Promise((resolve) => server.close(resolve));
    await subject.close();
  });

  it.each([
    // Once the burst is being served, so that reservations are in flight across each stall.
    ['three stalls of 0.5 s', [20, 80, 160], 500],
    ['one stall of 1.5 s', [80], 1_500],
  ])(
    'When the event loop stalls (%s) while a burst arrives, then no more than the limit is admitted',
    async (_, stallAfterAnswers, stallMs) => {
      // An account of its own: the window still counts the other case's burst.
      const email = `burst-${stallMs}@example.com`;
      await subject.createUser({ email, password: 'burst-password-1' });
      const token = await bearerToken(baseUrl, email, 'burst-password-1');
      const send = async () => {
        const res = await fetch(`${baseUrl}/api/readmodel`, {
          method: 'POST',
          headers: { authorization: token, 'content-type': 'application/json' },
          body: JSON.stringify({ query: { queryType: 'CurrentUser' } }),
        });
        await res.arrayBuffer();
        answers += 1;
        if (stallAfterAnswers.includes(answers)) stall(stallMs);
        return res.status;
      };
      let answers = 0;
      const burst = Array.from({ length: BURST }, send);
      const statuses = await Promise.all(burst);
      const admitted = statuses.filter((status) => status >= 200 && status < 300).length;
      const refused = statuses.filter((status) => status === 429).length;
      expect(admitted + refused).toBe(BURST);
      expect(admitted).toBeLessThanOrEqual(LIMIT);
      // The limit was reached, not dodged: the burst is twice the limit.
      expect(admitted).toBeGreaterThan(LIMIT / 2);
      expect(
        sampleSum(
          parseExposition(await subject.metrics.registry.metrics()),
          'fts_rate_limit_fail_open_total',
        ),
      ).toBe(0);
    },
    30_000,
  );
});
