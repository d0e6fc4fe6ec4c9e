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
/** Three stalls of half a second, each once the burst is being served: reservations are in flight. */
const STALL_AFTER_ANSWERS = [20, 80, 160];
const STALL_MS = 500;

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
    await subject.createUser({ email: 'burst@example.com', password: 'burst-password-1' });
    server = createServer(subject.app);
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    baseUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });
  afterAll(async () => {
    server.closeAllConnections();
    await new Promise((resolve) => server.close(resolve));
    await subject.close();
  });

  it('When the event loop stalls for 1.5 s while a burst arrives, then no more than the limit is admitted', async () => {
    const token = await bearerToken(baseUrl, 'burst@example.com', 'burst-password-1');
    const send = async () => {
      const res = await fetch(`${baseUrl}/api/readmodel`, {
        method: 'POST',
        headers: { authorization: token, 'content-type': 'application/json' },
        body: JSON.stringify({ query: { queryType: 'CurrentUser' } }),
      });
      await res.arrayBuffer();
      answers += 1;
      if (STALL_AFTER_ANSWERS.includes(answers)) stall(STALL_MS);
      return res.status;
    };
    let answers = 0;
    const burst = Array.from({ length: BURST }, send);
    const statuses = await Promise.all(burst);
    const admitted = statuses.filter((status) => status >= 200 && status < 300).length;
    const refused = statuses.filter((status) => status === 429).length;
    expect(admitted + refused).toBe(BURST);
    expect(admitted).toBeLessThanOrEqual(LIMIT);
    expect(
      sampleSum(parseExposition(await subject.metrics.registry.metrics()), 'fts_rate_limit_fail_open_total'),
    ).toBe(0);
  });
});
