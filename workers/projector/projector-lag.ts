import { partitionCounters } from '../../shared/event-stream/log-reader';
import type { AnyProjection } from '../../shared/projections/projection';
import type { RedisClient } from '../../shared/redis/connections';
import type { Keys } from '../../shared/redis/keys';
import { LOG_PARTITIONS } from '../../shared/redis/partitions';

/** How far one projection is behind the head of one log partition. */
export interface ProjectorLag {
  readonly projection: string;
  readonly partition: number;
  /** Log entries appended to the partition that the projection has not applied yet. */
  readonly entriesBehind: number;
}

/**
 * The lag of every (projection, partition), in two reads each: the batch script counts the
 * entries it applied beside the checkpoint, and the partition counts the entries ever appended to
 * it (`entries-added`, which trimming by LOG_RETENTION does not lower, unlike its length). Counts
 * are read before the partitions: an append in between makes the lag read high for one scrape,
 * never negative.
 *
 * A (projection, partition) whose checkpoint predates the count (built before the count existed)
 * has no sample: its lag is unknown until `npm run projections:rebuild`, and a guess would mislead.
 * Every command is single-key or single-slot (checkpoint and count share a hash tag).
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
