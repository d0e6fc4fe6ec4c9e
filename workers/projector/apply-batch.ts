import { ALL_ENVELOPE_CODECS } from '../../shared/envelope-codecs';
import type { EventEnvelope } from '../../shared/event-store/envelope';
import { EnvelopeCodecs } from '../../shared/event-store/envelope-codec';
import { copiedEnvelope, envelopeOfReference } from '../../shared/event-stream/log-reader';
import type { AnyProjection } from '../../shared/projections/projection';
import { type ProjectedVersions, projectedVersionsOf } from '../../shared/projections/projection-progress';
import type { RedisClient } from '../../shared/redis/connections';
import type { Keys } from '../../shared/redis/keys';
import { ScriptFencedError, scriptReply } from '../../shared/redis/script-codes';
import { registerScripts } from '../../shared/redis/scripts';
import { documentKeysOf, NO_CHECKPOINT, planBatch } from './batch-plan';
import { PROJECTION_SCRIPTS } from './projection.scripts';

/** The codecs every projection's events are opened with (ADR 0014). */
export const SEALED_ENVELOPES = new EnvelopeCodecs(ALL_ENVELOPE_CODECS);

/**
 * The outcome of applying one batch: how many entries and the version each aggregate of the batch
 * reached in the projection (what the projector announces), or the fence saying someone else did.
 */
export type BatchResult =
  | {
      readonly entries: number;
      /** True when the batch stopped at a limit (batchSize events, or entriesLimit entries): more may wait. */
      readonly full: boolean;
      readonly checkpoint: string;
      readonly projected: ProjectedVersions;
      /** The events applied (of the projection's type), opened. */
      readonly events: readonly EventEnvelope[];
    }
  | 'fenced';

/**
 * Applies the next batch of `projection` from one log partition after `checkpoint`: reads the
 * entries with the events they refer to (of the projection's type only) in one script, and the
 * documents they touch with them when the projection keeps those in the partition's slot (else
 * beside the opening), opens the sealed events (their aggregates' keys in one pipelined read, none
 * when the batch holds no sealed event: a projection always sees events as they were decided, an
 * erased account's personal fields as null), plans the writes (batch-plan.ts), and writes the
 * documents, their index entries and the new checkpoint in one fenced script.
 */
export async function applyNextBatch(
  redis: RedisClient,
  keys: Keys,
  projection: AnyProjection,
  partition: number,
  checkpoint: string,
  batchSize: number,
  codecs: EnvelopeCodecs = SEALED_ENVELOPES,
  /**
   * How many log entries at most, those of other aggregate types (stepped over) included; at
   * least batchSize. The projector steps over another aggregate's thousands in one call (issue 43).
   */
  entriesLimit: number = batchSize,
): Promise<BatchResult> {
  const batch = await readBatch(redis, keys, projection, partition, checkpoint, batchSize, entriesLimit);
  if (!batch) return { entries: 0, full: false, checkpoint, projected: new Map(), events: [] };
  const { documentKeys, documents } = batch;
  const [events, stored] = await Promise.all([
    codecs.open(redis, keys, batch.envelopes),
    documents ?? (documentKeys && readDocuments(redis, documentKeys)),
  ]);
  const applied = await applyEvents(
    redis,
    keys,
    projection,
    partition,
    events,
    { expected: checkpoint, next: batch.lastId, entries: batch.entries },
    stored,
  );
  return applied
    ? {
        entries: batch.entries,
        full: batch.entries === entriesLimit || batch.taken === batchSize,
        checkpoint: batch.lastId,
        projected: projectedVersionsOf(events),
        events,
      }
    : 'fenced';
}

/** A batch of log entries as a projection reads it. */
interface ProjectionBatch {
  readonly entries: number;
  /** Entries of the projection's type and copies (what batchSize bounds). */
  readonly taken: number;
  readonly lastId: string;
  /** The events of the projection's type, as stored (sealed fields still sealed), in log order. */
  readonly envelopes: EventEnvelope[];
  /**
   * The documents they touch, once each, in the order first touched; undefined when an entry
   * holds a copy of its event (written before ADR 0020), which names its aggregate only once read.
   */
  readonly documentKeys: string[] | undefined;
  /** Those documents' JSON (null when absent), when read with the entries (documentsIn). */
  readonly documents: ReadonlyMap<string, string | null> | undefined;
}

/**
 * The next batch of one log partition after `checkpoint` (undefined when there is none), with the
 * events of the projection's type and, for a projection keeping its documents in the partition's
 * slot (documentsIn), their documents: one script (read-projection-batch-1.lua). A live pass holds
 * a few entries, each naming another aggregate: a command per event's stream was most of the
 * projector's CPU (ioredis's per-command work), the script is one.
 */
async function readBatch(
  redis: RedisClient,
  keys: Keys,
  projection: AnyProjection,
  partition: number,
  checkpoint: string,
  batchSize: number,
  entriesLimit: number,
): Promise<ProjectionBatch | undefined> {
  registerScripts(redis, PROJECTION_SCRIPTS);
  const { aggregateType } = projection;
  const documentsIn = projection.documentsIn?.(keys, partition);
  const [count, lastId, named, documents, unusual] = await redis.readProjectionBatch(
    keys.logPartition(partition),
    checkpoint === NO_CHECKPOINT ? '-' : `(${checkpoint}`,
    batchSize,
    aggregateType,
    keys.aggregateStreamsIn(aggregateType, partition),
    documentsIn ?? '',
    Math.max(batchSize, entriesLimit),
  );
  if (count === 0 || lastId === null) return undefined;
  const inLogOrder: (EventEnvelope | undefined)[] = new Array<EventEnvelope | undefined>(count);
  const documentKeys = new Map<string, string>();
  for (let i = 0; i < named.length; i += 4) {
    const aggregateId = String(named[i + 1]);
    const reference = { aggregateType, aggregateId, version: Number(named[i + 2]) };
    inLogOrder[Number(named[i]) - 1] = envelopeOfReference(reference, named[i + 3] as string | null);
    if (!documentKeys.has(aggregateId)) {
      documentKeys.set(aggregateId, projection.documentKey(keys, aggregateId));
    }
  }
  for (let i = 0; i < unusual.length; i += 2) {
    const envelope = copiedEnvelope(unusual[i + 1] as [string, string[]]);
    if (envelope.aggregateType === aggregateType) inLogOrder[Number(unusual[i]) - 1] = envelope;
  }
  const envelopes = inLogOrder.filter((envelope): envelope is EventEnvelope => envelope !== undefined);
  // named holds 4 items an entry, unusual 2.
  const taken = named.length / 4 + unusual.length / 2;
  if (unusual.length > 0)
    return { entries: count, taken, lastId, envelopes, documentKeys: undefined, documents: undefined };
  return {
    entries: count,
    taken,
    lastId,
    envelopes,
    documentKeys: [...documentKeys.values()],
    documents: documentsIn === undefined ? undefined : documentsRead(documentsIn, documentKeys, documents),
  };
}

/**
 * The documents the read script answered, in the order first touched, by key. The script built
 * their keys as `documentsIn` and the aggregate id, the plan looks them up by the projection's
 * documentKey: the two must agree, or a document would be planned as absent and overwritten.
 */
function documentsRead(
  documentsIn: string,
  documentKeys: ReadonlyMap<string, string>,
  documents: readonly (string | null)[],
): ReadonlyMap<string, string | null> {
  const stored = new Map<string, string | null>();
  let i = 0;
  for (const [aggregateId, key] of documentKeys) {
    if (key !== documentsIn + aggregateId) {
      throw new Error(`document ${key} is not where the batch read it (${documentsIn + aggregateId})`);
    }
    stored.set(key, documents[i++] ?? null);
  }
  return stored;
}

/** The stored JSON of each document (null when absent), by key. */
async function readDocuments(
  redis: RedisClient,
  docKeys: readonly string[],
): Promise<ReadonlyMap<string, string | null>> {
  const stored = docKeys.length ? await redis.mget(...docKeys) : [];
  return new Map(docKeys.map((key, i) => [key, stored[i] ?? null]));
}

/**
 * Evolves the documents `events` (opened) touch and writes them, their index entries and the
 * checkpoint's move from `expected` to `next` (counting `entries` log entries applied) in one
 * fenced script; false when the checkpoint was no longer `expected` (nothing written). `stored`:
 * those documents as already read (every one `events` touch), else they are read here.
 */
export async function applyEvents(
  redis: RedisClient,
  keys: Keys,
  projection: AnyProjection,
  partition: number,
  events: readonly EventEnvelope[],
  checkpoint: { readonly expected: string; readonly next: string; readonly entries: number },
  stored?: ReadonlyMap<string, string | null>,
): Promise<boolean> {
  registerScripts(redis, PROJECTION_SCRIPTS);
  const writes = planBatch(
    projection,
    keys,
    partition,
    events,
    stored ?? (await readDocuments(redis, documentKeysOf(projection, keys, events))),
  );
  try {
    scriptReply(
      'applyProjectionBatch',
      await redis.applyProjectionBatch(
        ...writes.scriptArguments(checkpoint.expected, checkpoint.next, checkpoint.entries),
      ),
    );
  } catch (error) {
    if (error instanceof ScriptFencedError) return false;
    throw error;
  }
  return true;
}

/** Where a projection stands on one partition: its stored checkpoint, or none. */
export async function readCheckpoint(
  redis: RedisClient,
  keys: Keys,
  projection: Pick<AnyProjection, 'checkpointKey'>,
  partition: number,
): Promise<string> {
  return (await redis.get(projection.checkpointKey(keys, partition))) ?? NO_CHECKPOINT;
}
