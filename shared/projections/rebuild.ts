import type { Redis } from 'ioredis';

import { LOG_PARTITIONS } from '../event-store/partitions';
import type { Keys } from '../redis/keys';
import { registerScripts } from '../redis/scripts';
import type { Projection } from './projection';
import { applyNextBatch } from './projector';

const REBUILD_LEASE_MS = 60_000;

/**
 * Rebuilds a projection from the log, partition by partition: takes the partition's lease from
 * any live projector (whose next renew then fails), deletes the documents and the checkpoint, and
 * replays every entry. A projector batch racing the reset is refused by the checkpoint fence.
 */
export async function rebuildProjection(
  redis: Redis,
  keys: Keys,
  projection: Projection<unknown>,
): Promise<number> {
  registerScripts(redis);
  const token = `rebuild-${process.pid}-${Date.now()}`;
  let replayed = 0;
  for (let partition = 0; partition < LOG_PARTITIONS; partition++) {
    const lease = keys.projectionLease(projection.name, partition);
    await redis.set(lease, token, 'PX', REBUILD_LEASE_MS);
    try {
      await deleteDocuments(redis, keys.projectionDocumentPattern(projection.name, partition));
      await redis.del(keys.projectionCheckpoint(projection.name, partition));
      let checkpoint = '0-0';
      for (;;) {
        const result = await applyNextBatch(redis, keys, projection, partition, checkpoint, 500);
        if (result === 'fenced') {
          checkpoint = (await redis.get(keys.projectionCheckpoint(projection.name, partition))) ?? '0-0';
          continue;
        }
        if (result.entries === 0) break;
        replayed += result.entries;
        checkpoint = result.checkpoint;
        await redis.renewLock(lease, token, REBUILD_LEASE_MS);
      }
    } finally {
      await redis.releaseLock(lease, token);
    }
  }
  return replayed;
}

async function deleteDocuments(redis: Redis, pattern: string): Promise<void> {
  let cursor = '0';
  do {
    const [next, found] = await redis.scan(cursor, 'MATCH', pattern, 'COUNT', 500);
    if (found.length) await redis.unlink(...found);
    cursor = next;
  } while (cursor !== '0');
}
