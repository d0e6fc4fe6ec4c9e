/**
 * WORKER_CONSUMERS: a worker process runs only the consumers it names, so an operator can run
 * webhook delivery in replicas of its own, away from the projector's event loop. Real worker
 * processes, a real receiver on loopback.
 */
import { LOG_PARTITIONS } from '../../../shared/redis/partitions';
import { ALL_PROJECTIONS } from '../../../workers/projector/all-projections';
import { eventually } from '../../helpers/processes';
import { caughtUp } from '../../helpers/projector-fixtures';
import {
  createWebhookHarness,
  inOrderPerAggregate,
  startReceiver,
  type WebhookReceiver,
} from '../../helpers/webhooks';

describe('A worker that runs only some consumers (WORKER_CONSUMERS)', () => {
  let harness: Awaited<ReturnType<typeof createWebhookHarness>>;
  let receiver: WebhookReceiver;

  beforeAll(async () => {
    harness = await createWebhookHarness();
    receiver = await startReceiver();
  });
  afterAll(async () => {
    await receiver?.stop();
    await harness?.close();
  });

  it('When one worker runs projections and imports and another webhooks, then each does only its part, and together everything', async () => {
    const { redis, services } = harness.subject;
    await harness.subscribe(receiver.url);
    await harness.startWorker({ WORKER_CONSUMERS: 'projections, imports' });
    const team = await harness.teamWithEvents(3);
    await eventually(() => caughtUp(redis, services.keys, ALL_PROJECTIONS), 15_000);
    // Projected, yet nothing delivered: no lane of the subscription was even placed.
    const cursors = await Promise.all(
      Array.from({ length: LOG_PARTITIONS }, async (_, partition) => {
        const { keys } = services;
        const lanes = await redis.smembers(keys.webhookSubscriptions());
        return Promise.all(lanes.map((id) => redis.exists(keys.webhookCursor(id, partition))));
      }),
    );
    expect(cursors.flat().every((exists) => exists === 0)).toBe(true);
    expect(receiver.received).toHaveLength(0);

    await harness.startWorker({ WORKER_CONSUMERS: 'webhooks' });
    await eventually(() => inOrderPerAggregate(receiver, new Map([[team, 3]])).ok, 15_000);
  }, 60_000);
});
