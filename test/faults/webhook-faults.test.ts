/**
 * The two fault cases of issue 20, with real worker processes and a real receiver on loopback:
 * a receiver down for a while gets every event of that window afterwards, in order per
 * aggregate; a worker killed (SIGKILL) mid-delivery loses nothing, and what it sends twice keeps
 * its webhook-id.
 */
import { eventually } from '../helpers/processes';
import {
  createWebhookHarness,
  inOrderPerAggregate,
  parsedDeliveries,
  startReceiver,
  verifies,
  type WebhookReceiver,
} from '../helpers/webhooks';

/** Retries every 250 ms for about 10 s: the outage below (3 s) stands for the 30 s. */
const RETRY_EVERY_250MS = Array.from({ length: 40 }, () => '250ms').join(',');
const OUTAGE_MS = 3_000;

/** Each (aggregate, version) received more than once: whether every copy had the same webhook-id. */
function duplicatesKeepTheirId(receiver: WebhookReceiver): { duplicates: number; sameId: boolean } {
  const ids = new Map<string, Set<string>>();
  const counts = new Map<string, number>();
  for (const { id, payload } of parsedDeliveries(receiver)) {
    const key = `${payload.data.aggregateId}:${payload.data.version}`;
    ids.set(key, (ids.get(key) ?? new Set()).add(id));
    counts.set(key, (counts.get(key) ?? 0) + 1);
  }
  return {
    duplicates: [...counts.values()].filter((count) => count > 1).length,
    sameId: [...ids.values()].every((set) => set.size === 1),
  };
}

describe('Webhook delivery under faults', () => {
  let harness: Awaited<ReturnType<typeof createWebhookHarness>>;
  const receivers: WebhookReceiver[] = [];

  beforeEach(async () => {
    harness = await createWebhookHarness({ WEBHOOK_RETRY_SCHEDULE: RETRY_EVERY_250MS });
  });
  afterEach(async () => {
    await Promise.all(receivers.splice(0).map((r) => r.stop()));
    await harness.close();
  });

  it('When the receiver is down for a while and comes back, then every event of the window arrives, in order per aggregate', async () => {
    await harness.startWorker();
    const target = await startReceiver();
    receivers.push(target);
    const { secret } = await harness.subscribe(target.url);
    const before = await harness.teamWithEvents(2);
    await eventually(() => inOrderPerAggregate(target, new Map([[before, 2]])).ok, 15_000);

    await target.stop();
    const downSince = Date.now();
    const during = await Promise.all(Array.from({ length: 8 }, () => harness.teamWithEvents(3)));
    await new Promise((resolve) => setTimeout(resolve, Math.max(0, OUTAGE_MS - (Date.now() - downSince))));
    expect(target.received.filter((d) => d.receivedAt > downSince)).toHaveLength(0);
    await target.start();

    const expected = new Map([[before, 2], ...during.map((team) => [team, 3] as const)]);
    await eventually(() => inOrderPerAggregate(target, expected).ok, 20_000);
    expect(parsedDeliveries(target).every(({ delivery }) => verifies(delivery, secret))).toBe(true);
  }, 60_000);

  it('When the worker is killed mid-delivery, then another delivers what was left, nothing is lost, and duplicates keep their webhook-id', async () => {
    const target = await startReceiver();
    receivers.push(target);
    target.delayMs = 150; // Slow enough that deliveries are in flight when the worker dies.
    await harness.subscribe(target.url);
    const first = await harness.startWorker();
    const teams = await Promise.all(Array.from({ length: 16 }, () => harness.teamWithEvents(4)));
    await eventually(() => target.received.length >= 5, 15_000);
    first.child.kill('SIGKILL');
    await first.exited;
    const receivedAtKill = target.received.length;
    expect(inOrderPerAggregate(target, new Map(teams.map((team) => [team, 4]))).ok).toBe(false);

    await harness.startWorker();
    await eventually(() => inOrderPerAggregate(target, new Map(teams.map((team) => [team, 4]))).ok, 30_000);
    expect(target.received.length).toBeGreaterThan(receivedAtKill);
    // The killed worker's attempts in flight reached the receiver but were never acknowledged:
    // they are sent again, under the same webhook-id.
    const { duplicates, sameId } = duplicatesKeepTheirId(target);
    expect(duplicates).toBeGreaterThan(0);
    expect(sameId).toBe(true);
  }, 60_000);
});
