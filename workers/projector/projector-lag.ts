import { partitionCounters } from '../../shared/event-stream/log-reader';
import type { ProjectorLag } from '../../shared/metrics/metrics';
import type { AnyProjection } from '../../shared/projections/projection';
import type { RedisClient } from '../../shared/redis/connections';
import type { Keys } from '../../shared/redis/keys';
import { LOG_PARTITIONS } from '../../shared/redis/partitions';

/**
 * The lag of every (projection, partition), in two reads: the entries the batch script counted
 * beside the checkpoint, and the partition's `entries-added` (which trimming does not lower, unlike
 * its length). Counts are read before the partitions, so an append in between reads the lag high
 * for one scrape, never negative. A checkpoint older than its count has no sample until
 * `npm run projections:rebuild`: a guess would mislead. Every command is single-slot (checkpoint
 * and count share a hash tag).
 */
export async function readProjectorLag(
  redis: RedisClient,
  keys: Keys,
  projections: readonly AnyProjection[],
): Promise<ProjectorLag[]> {
  const partitions = Array.from({ length: LOG_PARTITIONS }, (_, partition) => partition);
  const applied = await Promise.all(
    projections.flatMap((projection) =>
      partitions.map(async (partition) => {
        const checkpointKey = projection.checkpointKey(keys, partition);
        const [checkpoint, count] = await redis.mget(
          checkpointKey,
          keys.projectionAppliedCount(checkpointKey),
        );
        const entriesApplied = count !== null && count !== undefined ? Number(count) : checkpoint ? null : 0;
        return { projection: projection.name, partition, entriesApplied };
      }),
    ),
  );
  const heads = await Promise.all(
    partitions.map(
      async (partition) => (await partitionCounters(redis, keys.logPartition(partition))).entriesAdded,
    ),
  );
  return applied.flatMap(({ projection, partition, entriesApplied }) =>
    entriesApplied === null
      ? []
      : [{ projection, partition, entriesBehind: Math.max(0, (heads[partition] ?? 0) - entriesApplied) }],
  );
}
