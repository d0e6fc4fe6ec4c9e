import { BEFORE_EVERYTHING, compareEntryIds, type EntryId } from '../../shared/event-stream/log-position';
import { type LogConsumer, positionOf } from '../../shared/event-stream/log-retention';
import type { RedisClient } from '../../shared/redis/connections';
import type { Keys } from '../../shared/redis/keys';
import { LOG_PARTITIONS } from '../../shared/redis/partitions';
import {
  webhookSubscriptionDecider,
  type WebhookSubscriptionState,
} from '../../shared/webhook-subscription/webhook-subscription.decider';

/** The position just before the entries appended from `ms` on (as the dispatcher starts a cursor). */
function positionBefore(ms: number): EntryId {
  return ms <= 0 ? BEFORE_EVERYTHING : { ms: ms - 1, seq: Number.MAX_SAFE_INTEGER };
}

/**
 * The webhook subscriptions as readers of the log (LOG_RETENTION): every subscription not deleted
 * (a disabled one resumes from its cursor when enabled again) needs each partition after its
 * cursor; one without a cursor yet after its creation, and one with a replay its cursor has not
 * applied yet after the replay's start.
 */
export function webhookLogConsumer(redis: RedisClient, keys: Keys): LogConsumer {
  return {
    name: 'webhook subscriptions',
    async oldestPositions() {
      const oldest: EntryId[] = Array.from({ length: LOG_PARTITIONS }, () => ({
        ms: Number.MAX_SAFE_INTEGER,
        seq: 0,
      }));
      const ids = await redis.smembers(keys.webhookSubscriptions());
      for (const id of ids) {
        const state = await redis.hget(
          keys.aggregateRecord(webhookSubscriptionDecider.aggregateType, id),
          'state',
        );
        const subscription = JSON.parse(state ?? 'null') as WebhookSubscriptionState;
        if (!subscription || subscription.status === 'deleted') continue;
        const cursors = await Promise.all(
          oldest.map((_, partition) =>
            redis.hmget(keys.webhookCursor(id, partition), 'checkpoint', 'replayId'),
          ),
        );
        cursors.forEach(([checkpoint, replayId], partition) => {
          let needed = checkpoint
            ? positionOf(checkpoint)
            : positionBefore(Date.parse(subscription.createdAt));
          const replay = subscription.replay;
          if (replay && replay.replayId !== replayId) {
            const from = positionBefore(Date.parse(replay.from));
            if (compareEntryIds(from, needed) < 0) needed = from;
          }
          if (compareEntryIds(needed, oldest[partition] as EntryId) < 0) oldest[partition] = needed;
        });
      }
      return oldest;
    },
  };
}
