import type { EventEnvelope } from '../../shared/event-store/envelope';
import { storedEnvelopes } from '../../shared/event-store/stored-envelope';
import { partitionCounters } from '../../shared/event-stream/log-reader';
import type { AnyProjection } from '../../shared/projections/projection';
import { type RedisClient, scanKeys } from '../../shared/redis/connections';
import type { Keys } from '../../shared/redis/keys';
import { LOG_PARTITIONS } from '../../shared/redis/partitions';
import { registerScripts } from '../../shared/redis/scripts';
import { applyEvents, applyNextBatch, readCheckpoint, SEALED_ENVELOPES } from './apply-batch';
import { NO_CHECKPOINT } from './batch-plan';
import { PROJECTION_SCRIPTS } from './projection.scripts';

const REBUILD_LEASE_MS = 60_000;
const REPLAY_BATCH = 500;

/**
 * Rebuilds a projection: takes every partition's lease, deletes every key of the projection, then
 * per partition folds the streams of its aggregates (they keep every event; the log may be trimmed,
 * ADR 0020) and goes on from the log's end as it was before the fold. An event appended meanwhile
 * is in both, and evolve ignores one it has applied; a projector batch racing the reset is refused
 * by the checkpoint fence, so correctness never depends on the leases. Returns how many events and
 * log entries were applied.
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
      replayed += await foldPartition(redis, keys, projection, partition, renewLeases);
      let checkpoint = await readCheckpoint(redis, keys, projection, partition);
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
 * Folds every aggregate of the projection's type in one partition from its stream, then sets the
 * checkpoint to the partition's last entry id as read before the fold (with the count of entries
 * ever appended up to it, for the lag). A projector racing the rebuild (one that had not applied
 * anything yet passes the fence of an empty checkpoint) may move the checkpoint meanwhile: each
 * write is fenced by the checkpoint as it is, and once a projector has moved it, the log replay goes
 * on from there (evolve ignores what was applied twice). Returns how many events were applied.
 */
async function foldPartition(
  redis: RedisClient,
  keys: Keys,
  projection: AnyProjection,
  partition: number,
  renewLeases: () => Promise<unknown>,
): Promise<number> {
  const end = await partitionCounters(redis, keys.logPartition(partition));
  const write = async (events: readonly EventEnvelope[], move?: { next: string; entries: number }) => {
    for (;;) {
      const checkpoint = await readCheckpoint(redis, keys, projection, partition);
      if (move && checkpoint !== NO_CHECKPOINT) return;
      const fence = move
        ? { expected: NO_CHECKPOINT, ...move }
        : { expected: checkpoint, next: checkpoint, entries: 0 };
      if (await applyEvents(redis, keys, projection, partition, events, fence)) return;
    }
  };
  let applied = 0;
  const pattern = keys.aggregateRecordPatternIn(projection.aggregateType, partition);
  for await (const recordKeys of scanKeys(redis, pattern)) {
    const ids = recordKeys.map((key) => keys.aggregateIdOfRecord(key));
    const streams = await Promise.all(
      ids.map((id) => redis.xrange(keys.aggregateStream(projection.aggregateType, id), '-', '+')),
    );
    const stored = ids.flatMap((id, i) => storedEnvelopes(projection.aggregateType, id, streams[i] ?? []));
    const events = await SEALED_ENVELOPES.open(redis, keys, stored);
    await write(events);
    applied += events.length;
    await renewLeases();
  }
  if (end.lastId !== NO_CHECKPOINT) await write([], { next: end.lastId, entries: end.entriesAdded });
  return applied;
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
