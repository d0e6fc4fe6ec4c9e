import { type LogConsumer, positionOf } from '../../shared/event-stream/log-retention';
import type { AnyProjection } from '../../shared/projections/projection';
import type { RedisClient } from '../../shared/redis/connections';
import type { Keys } from '../../shared/redis/keys';
import { LOG_PARTITIONS } from '../../shared/redis/partitions';

/**
 * The projections as readers of the log (LOG_RETENTION): each partition is needed after the least
 * checkpoint of any projection there. A projection without a checkpoint (new, or being rebuilt)
 * needs the partition from its start, so nothing is trimmed meanwhile.
 */
export function projectionsLogConsumer(
  redis: RedisClient,
  keys: Keys,
  projections: readonly AnyProjection[],
): LogConsumer {
  return {
    name: 'projections',
    async oldestPositions() {
      const partitions = Array.from({ length: LOG_PARTITIONS }, (_, partition) => partition);
      // One GET each: a projection's checkpoints live in its own slot (partition tag or {sport}).
      const checkpoints = await Promise.all(
        partitions.map((partition) =>
          Promise.all(projections.map((projection) => redis.get(projection.checkpointKey(keys, partition)))),
        ),
      );
      return checkpoints.map((ofPartition) =>
        ofPartition
          .map(positionOf)
          .reduce((oldest, position) =>
            position.ms < oldest.ms || (position.ms === oldest.ms && position.seq < oldest.seq)
              ? position
              : oldest,
          ),
      );
    },
  };
}
