import type { EventEnvelope } from '../../shared/event-store/envelope';
import type { AnyProjection } from '../../shared/projections/projection';
import type { Keys } from '../../shared/redis/keys';
import { BatchWrites } from './batch-writes';

/** The checkpoint of a partition nothing has been applied from. */
export const NO_CHECKPOINT = '0-0';

/** The documents `events` touch, once each, in the order first touched. */
export function documentKeysOf(
  projection: AnyProjection,
  keys: Keys,
  events: readonly EventEnvelope[],
): string[] {
  return [...new Set(events.map((event) => projection.documentKey(keys, event.aggregateId)))];
}

/**
 * Plans one batch, without I/O: evolves the stored documents (`stored`: key -> JSON, or null when
 * absent) by `events`, and collects the changed documents and the index entries they gain or lose
 * for the batch script of `partition`. A document left as it was is not written.
 */
export function planBatch(
  projection: AnyProjection,
  keys: Keys,
  partition: number,
  events: readonly EventEnvelope[],
  stored: ReadonlyMap<string, string | null>,
): BatchWrites {
  const docs = new Map<string, unknown>();
  for (const [key, json] of stored) docs.set(key, json === null ? null : (JSON.parse(json) as unknown));
  for (const event of events) {
    const key = projection.documentKey(keys, event.aggregateId);
    docs.set(key, projection.evolve(docs.get(key) ?? null, event));
  }

  const checkpointKey = projection.checkpointKey(keys, partition);
  const writes = new BatchWrites(checkpointKey, keys.projectionAppliedCount(checkpointKey));
  const entriesOf = (json: string | null) =>
    json === null ? [] : (projection.indexEntries?.(JSON.parse(json) as unknown, keys) ?? []);
  for (const [key, doc] of docs) {
    const previous = stored.get(key) ?? null;
    const next = doc === null ? null : JSON.stringify(doc);
    if (previous === next) continue;
    writes.document(key, next);
    if (projection.indexEntries) writes.indexes(entriesOf(previous), entriesOf(next));
  }
  return writes;
}
