/**
 * The delivery log's error of a failed attempt is a class (issue 29): `HTTP 500`, `connection
 * refused`, `response timeout`..., never the network error's own text (which can name what a host
 * resolves to). Read through GetWebhookDeliveries, with a real worker and real targets on loopback.
 */
import type { AddressInfo } from 'node:net';
import { createServer } from 'node:net';

import { eventually } from '../../helpers/processes';
import { createWebhookHarness, startReceiver, type WebhookReceiver } from '../../helpers/webhooks';

interface Attempt {
  status: string;
  httpStatus: number | null;
  error: string | null;
}

describe('The delivery log of failed attempts', () => {
  let harness: Awaited<ReturnType<typeof createWebhookHarness>>;
  const receivers: WebhookReceiver[] = [];

  beforeAll(async () => {
    harness = await createWebhookHarness({ WEBHOOK_TIMEOUT_MS: '1000' });
    await harness.startWorker();
  }, 60_000);
  afterAll(async () => {
    await Promise.all(receivers.map((r) => r.stop()));
    await harness.close();
  });

  /** The first attempt at the subscription's first event, as GetWebhookDeliveries answers it. */
  const firstAttempt = async (url: string) => {
    const { id } = await harness.subscribe(url, ['FantasyTeamCreatedEvent']);
    await harness.teamWithEvents(1);
    let first: Attempt | undefined;
    let text = '';
    await eventually(async () => {
      const res = await harness.admin.query({ queryType: 'GetWebhookDeliveries', subscriptionId: id });
      first = (res.body as { results: Attempt[] }).results.at(-1);
      text = res.text;
      return first !== undefined;
    }, 15_000);
    return { first, text };
  };

  /** A loopback port nobody listens on. */
  const closedPort = async () => {
    const server = createServer();
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const { port } = server.address() as AddressInfo;
    await new Promise<void>((resolve) => server.close(() => resolve()));
    return port;
  };

  it('When the target answers 500, then the attempt says HTTP 500', async () => {
    const target = await startReceiver();
    receivers.push(target);
    target.status = 500;
    const { first } = await firstAttempt(target.url);
    expect(first).toMatchObject({ status: 'retrying', httpStatus: 500, error: 'HTTP 500' });
  });

  it('When nothing listens at the target, then the attempt says connection refused and names no address', async () => {
    const port = await closedPort();
    const { first, text } = await firstAttempt(`http://127.0.0.1:${port}/hook`);
    expect(first).toMatchObject({ httpStatus: null, error: 'connection refused' });
    expect(text).not.toMatch(/ECONNREFUSED|127\.0\.0\.1/);
    expect(text).not.toContain(`:${port}`);
  });

  it('When the target does not answer in time, then the attempt says response timeout', async () => {
    const target = await startReceiver();
    receivers.push(target);
    target.delayMs = 5_000;
    const { first } = await firstAttempt(target.url);
    expect(first).toMatchObject({ httpStatus: null, error: 'response timeout' });
  });
});
