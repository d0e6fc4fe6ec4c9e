import type { Redis } from 'ioredis';

import { LOG_PARTITIONS } from '../event-store/partitions';
import type { Keys } from '../redis/keys';
import { registerScripts } from '../redis/scripts';
import type { AnyProjection } from './projection';
import { applyNextBatch } from './projector';

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
  redis: Redis,
  keys: Keys,
  projection: AnyProjection,
): Promise<number> {
  registerScripts(redis);
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
      let checkpoint = '0-0';
      for (;;) {
        const result = await applyNextBatch(redis, keys, projection, partition, checkpoint, REPLAY_BATCH);
        if (result === 'fenced') {
          checkpoint = (await redis.get(projection.checkpointKey(keys, partition))) ?? '0-0';
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

async function deleteMatching(redis: Redis, pattern: string): Promise<void> {
  let cursor = '0';
  do {
    const [next, found] = await redis.scan(cursor, 'MATCH', pattern, 'COUNT', 1000);
    if (found.length) await redis.unlink(...found);
    cursor = next;
  } while (cursor !== '0');
}
