/**
 * Webhook targets at delivery time (issue 20): with WEBHOOK_ALLOW_PRIVATE_TARGETS=false the worker
 * refuses, when it connects, loopback and private addresses, whether written in the URL or
 * resolved from a host name, and http; nothing reaches the target. The subscriptions are made
 * through an ingress that allows them (the early check is webhook-commands.test.ts's), so the
 * connect-time guard alone stands between the worker and the target.
 */
import type { AddressInfo } from 'node:net';
import { createServer, type Server } from 'node:net';

import { eventually } from '../../helpers/processes';
import { createWebhookHarness } from '../../helpers/webhooks';

interface Attempt {
  status: string;
  httpStatus: number | null;
  error: string | null;
}

describe('Webhook targets at delivery time', () => {
  let harness: Awaited<ReturnType<typeof createWebhookHarness>>;
  let tcp: Server;
  let port = 0;
  let connections = 0;

  beforeAll(async () => {
    tcp = createServer((socket) => {
      connections++;
      socket.destroy();
    });
    await new Promise<void>((resolve) => tcp.listen(0, '127.0.0.1', resolve));
    port = (tcp.address() as AddressInfo).port;
    harness = await createWebhookHarness({ WEBHOOK_TIMEOUT_MS: '1000' });
    await harness.startWorker({ WEBHOOK_ALLOW_PRIVATE_TARGETS: 'false' });
  }, 60_000);
  afterAll(async () => {
    await harness.close();
    await new Promise<void>((resolve) => tcp.close(() => resolve()));
  });

  it.each([
    ['a loopback address', () => `https://127.0.0.1:${port}/hook`, 'target refused: private address'],
    [
      'a host name resolving to loopback',
      () => `https://localhost:${port}/hook`,
      'target refused: private address',
    ],
    ['a private address', () => 'https://10.255.255.1/hook', 'target refused: private address'],
    [
      'a metadata address',
      () => 'https://169.254.169.254/latest/meta-data',
      'target refused: private address',
    ],
    ['plain http', () => `http://127.0.0.1:${port}/hook`, 'target refused: http not allowed'],
  ])(
    'When private targets are not allowed and the target is %s, then the attempt is refused, logged as a class without the address, and nothing is sent',
    async (_what, url, errorClass) => {
      const { id } = await harness.subscribe(url(), ['FantasyTeamCreatedEvent']);
      await harness.teamWithEvents(1);
      let first: Attempt | undefined;
      await eventually(async () => {
        const res = await harness.admin.query({ queryType: 'GetWebhookDeliveries', subscriptionId: id });
        first = (res.body as { results: Attempt[] }).results.at(-1);
        return first !== undefined;
      }, 15_000);
      expect(first).toMatchObject({ httpStatus: null, error: errorClass });
      // GetWebhookDeliveries tells an Admin nothing of what a name resolves to, nor where it points.
      const log = await harness.admin.query({ queryType: 'GetWebhookDeliveries', subscriptionId: id });
      expect(log.text).not.toMatch(/127\.0\.0\.1|10\.255|169\.254|localhost|family|host:|DNS lookup/);
      expect(connections).toBe(0);
    },
  );
});
