import { randomUUID } from 'node:crypto';

import { LOG_PARTITIONS, partitionOf } from '../../../shared/redis/partitions';
import { eventually } from '../../helpers/processes';
import {
  createWebhookHarness,
  parsedDeliveries,
  startReceiver,
  type WebhookReceiver,
} from '../../helpers/webhooks';

/**
 * A second webhook delivery replica joins: the first gives half its partitions back at its next
 * balance. Its attempts in flight there must end (and move their lanes' cursors) before the lease
 * goes: released first, the other replica read the cursors those attempts had not moved yet and sent
 * the same events again, a webhook-id twice (seen with two worker containers on a busy machine,
 * test/image/workers-share.test.ts). The receiver holds every answer here, so the attempts stay in
 * flight across both replicas' balances.
 */

/** The lease name of the dispatcher's partitions (its one log consumer). */
const DISPATCHER = 'webhooks';

function oneTeamPerPartition(): string[] {
  const byPartition = new Map<number, string>();
  while (byPartition.size < LOG_PARTITIONS) {
    const id = randomUUID();
    if (!byPartition.has(partitionOf(id))) byPartition.set(partitionOf(id), id);
  }
  return [...byPartition.values()];
}

describe('A second webhook delivery replica joining', () => {
  let harness: Awaited<ReturnType<typeof createWebhookHarness>>;
  let receiver: WebhookReceiver;

  beforeAll(async () => {
    // Held attempts must not time out while the replicas balance (each every 1.7 s).
    harness = await createWebhookHarness({ WEBHOOK_TIMEOUT_MS: '60000' });
    receiver = await startReceiver();
  });
  afterAll(async () => {
    receiver.releaseHeld();
    await harness.close();
    await receiver.stop();
  });

  it('When it joins while every partition has an attempt in flight, then partitions change hands only after those attempts end, and no event is delivered twice', async () => {
    const { redis } = harness.subject;
    const { keys } = harness.subject.services;
    const members = keys.webhookDispatcherMembers();
    const beat = async (replica: string) => Number(await redis.zscore(members, replica));
    const leaseOwners = () =>
      Promise.all(
        Array.from({ length: LOG_PARTITIONS }, (_, p) => redis.get(keys.projectionLease(DISPATCHER, p))),
      );
    const createTeams = async () => {
      for (const teamId of oneTeamPerPartition()) {
        const res = await harness.admin.send('CreateFantasyTeam', {
          aggregateRootId: teamId,
          name: 'hand-over',
        });
        if (res.status !== 200) throw new Error(`CreateFantasyTeam answered ${res.status}: ${res.text}`);
      }
    };

    await harness.startWorker({ WORKER_CONSUMERS: 'webhooks' });
    await eventually(async () => (await redis.zcard(members)) === 1, 30_000, 20);
    const [first = ''] = await redis.zrange(members, 0, -1);
    await eventually(async () => (await leaseOwners()).every((owner) => owner === first), 30_000, 20);
    await harness.subscribe(receiver.url, ['FantasyTeamCreatedEvent']);
    receiver.hold();
    await createTeams();
    await eventually(() => receiver.received.length === LOG_PARTITIONS, 30_000, 20);

    await harness.startWorker({ WORKER_CONSUMERS: 'webhooks' });
    await eventually(async () => (await redis.zcard(members)) === 2, 30_000, 20);
    const [second = ''] = (await redis.zrange(members, 0, -1)).filter((member) => member !== first);
    // The first balances after the second joined (it gives half back), then the second twice after
    // that (it takes what is free, and its lanes there step).
    const joined = await beat(second);
    await eventually(async () => (await beat(first)) > joined, 30_000, 20);
    for (let turn = 0; turn < 2; turn++) {
      const after = await beat(first);
      await eventually(async () => (await beat(second)) > after, 30_000, 20);
    }
    expect(receiver.received).toHaveLength(LOG_PARTITIONS);
    expect((await leaseOwners()).every((owner) => owner === first)).toBe(true);

    receiver.releaseHeld();
    await eventually(
      async () => (await leaseOwners()).filter((owner) => owner === second).length === LOG_PARTITIONS / 2,
      30_000,
      20,
    );
    // A second event in every partition, each sent by whichever replica holds it now.
    await createTeams();
    await eventually(() => receiver.received.length >= 2 * LOG_PARTITIONS, 30_000, 20);
    const settled = Math.max(await beat(first), await beat(second));
    await eventually(async () => Math.min(await beat(first), await beat(second)) > settled, 30_000, 20);
    const ids = parsedDeliveries(receiver).map(({ id }) => id);
    expect(ids).toHaveLength(2 * LOG_PARTITIONS);
    expect(new Set(ids).size).toBe(2 * LOG_PARTITIONS);
  }, 120_000);
});
