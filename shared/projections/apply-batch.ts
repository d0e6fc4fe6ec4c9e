import { ALL_ENVELOPE_CODECS } from '../envelope-codecs';
import type { EventEnvelope } from '../event-store/envelope';
import { EnvelopeCodecs } from '../event-store/envelope-codec';
import { envelopesOfEntries } from '../event-stream/log-reader';
import type { RedisClient } from '../redis/connections';
import type { Keys } from '../redis/keys';
import { ScriptFencedError, scriptReply } from '../redis/script-codes';
import { registerScripts } from '../redis/scripts';
import {
  documentKeysOf,
  documentKeysOfEntries,
  eventsFor,
  NO_CHECKPOINT,
  planBatch,
  readsType,
} from './batch-plan';
import type { AnyProjection } from './projection';
import { PROJECTION_SCRIPTS } from './projection.scripts';
import { type ProjectedVersions, projectedVersionsOf } from './projection-progress';

/** The codecs every projection's events are opened with (ADR 0014). */
export const SEALED_ENVELOPES = new EnvelopeCodecs(ALL_ENVELOPE_CODECS);

/**
 * The outcome of applying one batch: how many entries and the version each aggregate of the batch
 * reached in the projection (what the projector announces), or the fence saying someone else did.
 */
export type BatchResult =
  { readonly entries: number; readonly checkpoint: string; readonly projected: ProjectedVersions } | 'fenced';

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
): Promise<BatchResult> {
  registerScripts(redis, PROJECTION_SCRIPTS);
  const documentsIn = projection.documentsIn?.(keys, partition);
  // A live pass holds a few entries, each naming another aggregate: one script instead of a
  // command per event's stream (ioredis's per-command work was most of the projector's CPU).
  const [entries, named, documents] = await redis.readProjectionBatch(
    keys.logPartition(partition),
    checkpoint === NO_CHECKPOINT ? '-' : `(${checkpoint}`,
    batchSize,
    projection.aggregateType,
    keys.aggregateStreamsIn(projection.aggregateType, partition),
    documentsIn ?? '',
  );
  const last = entries.at(-1);
  if (!last) return { entries: 0, checkpoint, projected: new Map() };
  const docKeys = documentKeysOfEntries(projection, keys, entries);
  const [events, stored] = await Promise.all([
    codecs.open(
      redis,
      keys,
      eventsFor(projection, envelopesOfEntries(entries, named, readsType(projection))),
    ),
    docKeys &&
      (documentsIn === undefined ? readDocuments(redis, docKeys) : documentsRead(docKeys, documents)),
  ]);
  const applied = await applyEvents(
    redis,
    keys,
    projection,
    partition,
    events,
    { expected: checkpoint, next: last[0], entries: entries.length },
    stored,
  );
  return applied
    ? { entries: entries.length, checkpoint: last[0], projected: projectedVersionsOf(events) }
    : 'fenced';
}

/**
 * The documents the read script answered (key, JSON, key, JSON...), which must be `docKeys` in
 * order: the script builds their keys from the projection's documentsIn, the plan looks them up by
 * its documentKey, and a document looked up under another key would be planned as absent.
 */
function documentsRead(
  docKeys: readonly string[],
  documents: readonly (string | null)[],
): ReadonlyMap<string, string | null> {
  if (documents.length !== 2 * docKeys.length) {
    throw new Error(`the batch read ${documents.length / 2} documents where ${docKeys.length} were expected`);
  }
  const stored = new Map<string, string | null>();
  docKeys.forEach((key, i) => {
    if (documents[2 * i] !== key) {
      throw new Error(`the batch read document ${documents[2 * i]} where ${key} was expected`);
    }
    stored.set(key, documents[2 * i + 1] ?? null);
  });
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
