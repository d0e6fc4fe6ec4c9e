import { ALL_ENVELOPE_CODECS } from '../envelope-codecs';
import type { EventEnvelope } from '../event-store/envelope';
import { EnvelopeCodecs } from '../event-store/envelope-codec';
import { type RawLogEntry, resolveLogEntries } from '../event-stream/log-reader';
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
 * entries, then the events they refer to (of the projection's type only) and the documents they
 * touch together, opens the sealed events (their aggregates' keys in one pipelined read, none when
 * the batch holds no sealed event: a projection always sees events as they were decided, an erased
 * account's personal fields as null), plans the writes (batch-plan.ts), and writes the documents,
 * their index entries and the new checkpoint in one fenced script.
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
  const start = checkpoint === NO_CHECKPOINT ? '-' : `(${checkpoint}`;
  const entries: RawLogEntry[] = await redis.xrange(
    keys.logPartition(partition),
    start,
    '+',
    'COUNT',
    batchSize,
  );
  const last = entries.at(-1);
  if (!last) return { entries: 0, checkpoint, projected: new Map() };
  // The entries name the documents they touch: read them beside the events (one round trip).
  const docKeys = documentKeysOfEntries(projection, keys, entries);
  const [events, stored] = await Promise.all([
    resolveLogEntries(redis, keys, entries, readsType(projection)).then((resolved) =>
      codecs.open(redis, keys, eventsFor(projection, resolved)),
    ),
    docKeys && readDocuments(redis, docKeys),
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
