/**
 * Webhook delivery (issue 20) through HTTP on a real Redis, with a real worker process and a
 * real receiver on loopback verifying signatures with the standardwebhooks package.
 */
import { eventually, type ServiceProcess } from '../../helpers/processes';
import {
  createWebhookHarness,
  inOrderPerAggregate,
  parsedDeliveries,
  startReceiver,
  verifies,
  type WebhookReceiver,
} from '../../helpers/webhooks';

describe('Webhook delivery', () => {
  let harness: Awaited<ReturnType<typeof createWebhookHarness>>;
  let worker: ServiceProcess;
  const receivers: WebhookReceiver[] = [];
  const receiver = async () => {
    const started = await startReceiver();
    receivers.push(started);
    return started;
  };

  beforeAll(async () => {
    harness = await createWebhookHarness();
    worker = await harness.startWorker();
  }, 60_000);
  afterAll(async () => {
    await Promise.all(receivers.map((r) => r.stop()));
    await harness.close();
  });

  it('When teams change, then the receiver gets every event once, signed, in order per aggregate, with data in camelCase', async () => {
    const target = await receiver();
    const { secret } = await harness.subscribe(target.url);
    const teams = await Promise.all([1, 2, 3].map(() => harness.teamWithEvents(4)));
    const expected = new Map(teams.map((team) => [team, 4]));
    await eventually(() => inOrderPerAggregate(target, expected).ok, 15_000);
    const deliveries = parsedDeliveries(target);
    expect(deliveries.every(({ delivery }) => verifies(delivery, secret))).toBe(true);
    expect(new Set(deliveries.map((d) => d.id)).size).toBe(deliveries.length);
    const linked = deliveries.find((d) => d.payload.type === 'FantasyTeamLinkedEvent');
    expect(linked?.payload.data).toEqual({
      fantasyTeamExternalId: 1,
      fantasyUserId: 1,
      linkedAt: expect.any(String),
      aggregateId: expect.any(String),
      version: 2,
    });
    expect(verifies(deliveries[0]!.delivery, 'whsec_' + Buffer.alloc(32).toString('base64'))).toBe(false);
  });

  it('When a subscription asks for one type, then it gets only that type', async () => {
    const target = await receiver();
    await harness.subscribe(target.url, ['FantasyTeamLinkedEvent']);
    const team = await harness.teamWithEvents(3);
    await eventually(() => target.received.length >= 1, 15_000);
    // Give a later, wrongly sent event the time to arrive: a second team's link marks the end.
    const marker = await harness.teamWithEvents(2);
    await eventually(
      () => parsedDeliveries(target).some((d) => d.payload.data.aggregateId === marker),
      15_000,
    );
    const types = parsedDeliveries(target).map((d) => d.payload.type);
    expect(new Set(types)).toEqual(new Set(['FantasyTeamLinkedEvent']));
    expect(parsedDeliveries(target).filter((d) => d.payload.data.aggregateId === team)).toHaveLength(1);
  });

  it('When the receiver fails twice, then the event is retried under the same webhook-id and the next one waits for it', async () => {
    const target = await receiver();
    target.status = 503;
    await harness.subscribe(target.url);
    const team = await harness.teamWithEvents(2);
    await eventually(() => target.received.length >= 2, 15_000);
    target.status = 200;
    await eventually(() => inOrderPerAggregate(target, new Map([[team, 2]])).ok, 15_000);
    const deliveries = parsedDeliveries(target);
    const first = deliveries.filter((d) => d.payload.data.version === 1);
    expect(first.length).toBeGreaterThanOrEqual(3);
    expect(new Set(first.map((d) => d.id)).size).toBe(1);
    expect(new Set(first.map((d) => d.delivery.headers['webhook-timestamp'])).size).toBeGreaterThanOrEqual(1);
    // Version 2 was never sent before version 1 was delivered.
    const firstOfV2 = deliveries.findIndex((d) => d.payload.data.version === 2);
    const lastOfV1 = deliveries.map((d) => d.payload.data.version).lastIndexOf(1);
    expect(firstOfV2).toBeGreaterThan(lastOfV1);
  });

  it('When one endpoint keeps failing, then another subscription still gets its events', async () => {
    const dead = await receiver();
    dead.status = 500;
    const alive = await receiver();
    await harness.subscribe(dead.url);
    await harness.subscribe(alive.url);
    const team = await harness.teamWithEvents(3);
    await eventually(() => inOrderPerAggregate(alive, new Map([[team, 3]])).ok, 15_000);
  });

  afterAll(() => {
    expect(worker.stdout()).not.toMatch(/whsec_/);
  });
});
