import { type RedisClient, scanKeys } from '../redis/connections';
import type { Keys } from '../redis/keys';
import { LOG_PARTITIONS } from '../redis/partitions';
import { registerScripts } from '../redis/scripts';
import { applyNextBatch, readCheckpoint } from './apply-batch';
import { NO_CHECKPOINT } from './batch-plan';
import type { AnyProjection } from './projection';
import { PROJECTION_SCRIPTS } from './projection.scripts';

const REBUILD_LEASE_MS = 60_000;
const REPLAY_BATCH = 500;

/**
 * Rebuilds a projection from the log: takes every partition's lease from any live projector
 * (whose next renew then fails), deletes every key of the projection (documents, indexes,
 * checkpoints), and replays each partition from its first entry. A projector batch racing the
 * reset is refused by the checkpoint fence; correctness never depends on the leases, which only
 * keep the projectors from doing the same work meanwhile.
 */
export async function rebuildProjection(
  redis: RedisClient,
  keys: Keys,
  projection: AnyProjection,
): Promise<number> {
  registerScripts(redis, PROJECTION_SCRIPTS);
  const token = `rebuild-${process.pid}-${Date.now()}`;
  const leases = Array.from({ length: LOG_PARTITIONS }, (_, partition) =>
    keys.projectionLease(projection.name, partition),
  );
  const renewLeases = () =>
    Promise.all(leases.map((lease) => redis.renewLock(lease, token, REBUILD_LEASE_MS)));
  await Promise.all(leases.map((lease) => redis.set(lease, token, 'PX', REBUILD_LEASE_MS)));
  let replayed = 0;
  try {
    for (const pattern of projection.keyPatterns(keys)) await deleteMatching(redis, pattern);
    for (let partition = 0; partition < LOG_PARTITIONS; partition++) {
      let checkpoint = NO_CHECKPOINT;
      for (;;) {
        const result = await applyNextBatch(redis, keys, projection, partition, checkpoint, REPLAY_BATCH);
        if (result === 'fenced') {
          checkpoint = await readCheckpoint(redis, keys, projection, partition);
          continue;
        }
        if (result.entries === 0) break;
        replayed += result.entries;
        checkpoint = result.checkpoint;
        await renewLeases();
      }
    }
  } finally {
    await Promise.all(leases.map((lease) => redis.releaseLock(lease, token)));
  }
  return replayed;
}

/**
 * Deletes every key matching `pattern` on every server that holds keys. One UNLINK per key: the
 * keys a node returns may lie in different slots, and a cluster refuses a multi-key command across
 * slots; each goes to its slot's master (the replies still share round trips).
 */
async function deleteMatching(redis: RedisClient, pattern: string): Promise<void> {
  for await (const found of scanKeys(redis, pattern)) {
    await Promise.all(found.map((key) => redis.unlink(key)));
  }
}
