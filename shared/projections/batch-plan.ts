import type { EventEnvelope } from '../event-store/envelope';
import { logEntryContent, type RawLogEntry } from '../event-stream/log-reader';
import type { Keys } from '../redis/keys';
import { BatchWrites } from './batch-writes';
import type { AnyProjection } from './projection';

/** The checkpoint of a partition nothing has been applied from. */
export const NO_CHECKPOINT = '0-0';

/** Whether `projection` reads events of an aggregate type: the others are never read from their streams. */
export function readsType(projection: AnyProjection): (aggregateType: string) => boolean {
  return (aggregateType) => aggregateType === projection.aggregateType;
}

/**
 * The events `projection` reads among a batch's resolved log entries (null: an entry of a type it
 * does not read, left unread by resolveLogEntries), in log order.
 */
export function eventsFor(
  projection: AnyProjection,
  envelopes: readonly (EventEnvelope | null)[],
): EventEnvelope[] {
  return envelopes.filter(
    (event): event is EventEnvelope => event !== null && event.aggregateType === projection.aggregateType,
  );
}

/** The documents `events` touch, once each, in the order first touched. */
export function documentKeysOf(
  projection: AnyProjection,
  keys: Keys,
  events: readonly EventEnvelope[],
): string[] {
  return [...new Set(events.map((event) => projection.documentKey(keys, event.aggregateId)))];
}

/**
 * The documents a batch of log entries touches, once each, in the order first touched (the order
 * documentKeysOf gives for their events), read from the entries themselves: an entry names its
 * event's aggregate (ADR 0020), so the documents can be read beside the events. Undefined when an
 * entry holds a copy of its event (written before ADR 0020), which names it only once parsed.
 */
export function documentKeysOfEntries(
  projection: AnyProjection,
  keys: Keys,
  entries: readonly RawLogEntry[],
): string[] | undefined {
  const documents = new Set<string>();
  for (const entry of entries) {
    const content = logEntryContent(entry);
    if ('copy' in content) return undefined;
    if (content.aggregateType === projection.aggregateType)
      documents.add(projection.documentKey(keys, content.aggregateId));
  }
  return [...documents];
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
