import { type EventEnvelope, parseEnvelope } from '../event-store/envelope';
import { EVENT_STORE_SCRIPTS } from '../event-store/event-store.scripts';
import { envelopeFromStream, storedEnvelopes } from '../event-store/stored-envelope';
import type { RedisClient } from '../redis/connections';
import type { Keys } from '../redis/keys';
import { registerScripts } from '../redis/scripts';
import { compareEntryIds, type EntryId, formatEntryId, parseEntryId } from './log-position';

/**
 * Opens stored envelopes as they were written (the event store's codecs: sealed personal fields
 * opened, or null once erased). The identity where nothing is sealed.
 */
export type EnvelopeOpener = (envelopes: readonly EventEnvelope[]) => Promise<EventEnvelope[]>;

export const OPEN_AS_STORED: EnvelopeOpener = (envelopes) => Promise.resolve([...envelopes]);

/** One entry of the global log, opened. */
export interface LogEntry {
  readonly partition: number;
  readonly id: EntryId;
  readonly envelope: EventEnvelope;
}

export interface LogBatch {
  /** In entry id order across partitions (ties by partition): see {@link readLogAfter}. */
  readonly entries: readonly LogEntry[];
  /** True when a partition had more than the batch held: read again. */
  readonly more: boolean;
}

/** One entry of a log partition as XRANGE answers it: its id and its fields. */
export type RawLogEntry = [id: string, fields: string[]];
type RawEntry = RawLogEntry;

/**
 * The fields of a log entry (append-events-6.lua): a reference to the event, which its aggregate's
 * stream holds, in the partition's slot (ADR 0020).
 */
const REFERENCE = { type: 'type', id: 'id', version: 'version' } as const;
/** The one field of a log entry written before ADR 0020: a full copy of the envelope (JSON). */
const LEGACY_COPY_FIELD = 'event';

/** The event a log entry names: its aggregate and version, or (written before ADR 0020) itself. */
export type LogEntryContent =
  | { readonly aggregateType: string; readonly aggregateId: string; readonly version: number }
  | { readonly copy: string };

/** What a log entry holds, from its fields; throws on fields no version of the service writes. */
export function logEntryContent([entryId, fields]: RawLogEntry): LogEntryContent {
  if (fields[0] === LEGACY_COPY_FIELD && fields[1] !== undefined) return { copy: fields[1] };
  const [typeField, aggregateType, idField, aggregateId, versionField, version] = fields;
  if (
    typeField !== REFERENCE.type ||
    idField !== REFERENCE.id ||
    versionField !== REFERENCE.version ||
    aggregateType === undefined ||
    aggregateId === undefined ||
    !Number.isSafeInteger(Number(version))
  ) {
    throw new Error(`log entry ${entryId} holds neither a reference nor a copy of an event`);
  }
  return { aggregateType, aggregateId, version: Number(version) };
}

/** The fields of a log entry referring to one event (what append-events-6.lua writes). */
export function logReferenceFields(
  envelope: Pick<EventEnvelope, 'aggregateType' | 'aggregateId' | 'version'>,
): string[] {
  return [
    REFERENCE.type,
    envelope.aggregateType,
    REFERENCE.id,
    envelope.aggregateId.toLowerCase(),
    REFERENCE.version,
    String(envelope.version),
  ];
}

/**
 * The envelopes of log entries as stored (sealed fields still sealed: the caller opens them), in
 * the entries' order: THE way every reader of the log turns entries into events. An entry refers
 * to its event, which is read from its aggregate's stream (one XRANGE per aggregate, sent together:
 * every stream of a partition shares its slot); an entry written before ADR 0020 holds a copy,
 * read as it is. Entries of a type `wanted` refuses are null, and their streams are not read.
 * Throws when a stream does not hold the event an entry names (streams are never trimmed).
 */
export async function resolveLogEntries(
  redis: RedisClient,
  keys: Keys,
  entries: readonly RawLogEntry[],
): Promise<EventEnvelope[]>;
export async function resolveLogEntries(
  redis: RedisClient,
  keys: Keys,
  entries: readonly RawLogEntry[],
  wanted: (aggregateType: string) => boolean,
): Promise<(EventEnvelope | null)[]>;
export async function resolveLogEntries(
  redis: RedisClient,
  keys: Keys,
  entries: readonly RawLogEntry[],
  wanted: (aggregateType: string) => boolean = () => true,
): Promise<(EventEnvelope | null)[]> {
  const resolved: (EventEnvelope | null)[] = entries.map(() => null);
  const reads = new Map<
    string,
    { aggregateType: string; aggregateId: string; from: number; to: number; at: Map<number, number> }
  >();
  entries.forEach((entry, index) => {
    const content = logEntryContent(entry);
    if ('copy' in content) {
      const envelope = parseEnvelope(content.copy);
      if (wanted(envelope.aggregateType)) resolved[index] = envelope;
      return;
    }
    const { aggregateType, aggregateId, version } = content;
    if (!wanted(aggregateType)) return;
    const streamKey = keys.aggregateStream(aggregateType, aggregateId);
    const read = reads.get(streamKey) ?? {
      aggregateType,
      aggregateId,
      from: version,
      to: version,
      at: new Map(),
    };
    read.from = Math.min(read.from, version);
    read.to = Math.max(read.to, version);
    read.at.set(version, index);
    reads.set(streamKey, read);
  });
  await Promise.all(
    [...reads].map(async ([streamKey, read]) => {
      const stored = (await redis.xrange(streamKey, `0-${read.from}`, `0-${read.to}`)) as RawEntry[];
      for (const envelope of storedEnvelopes(read.aggregateType, read.aggregateId, stored)) {
        const index = read.at.get(envelope.version);
        if (index !== undefined) resolved[index] = envelope;
      }
      for (const [version, index] of read.at) {
        if (resolved[index] === null) {
          throw new MissingEventError(entries[index]?.[0], read.aggregateType, read.aggregateId, version);
        }
      }
    }),
  );
  return resolved;
}

/**
 * The envelope (as stored, sealed fields still sealed) of the event a log entry refers to, from
 * what its aggregate's stream holds at that version, read beside the entry by a script
 * (read-projection-batch-1.lua): null when the stream does not hold it, which throws as
 * {@link resolveLogEntries} does (streams are never trimmed).
 */
export function envelopeOfReference(
  reference: { readonly aggregateType: string; readonly aggregateId: string; readonly version: number },
  stored: string | null,
): EventEnvelope {
  const { aggregateType, aggregateId, version } = reference;
  if (stored === null) throw new MissingEventError(undefined, aggregateType, aggregateId, version);
  return envelopeFromStream(stored, { aggregateType, aggregateId: aggregateId.toLowerCase(), version });
}

/**
 * The envelope a log entry written before ADR 0020 holds (a copy); throws when the entry holds
 * neither a copy nor a reference, or is a reference (whose event its stream holds).
 */
export function copiedEnvelope(entry: RawLogEntry): EventEnvelope {
  const content = logEntryContent(entry);
  if (!('copy' in content))
    throw new Error(`log entry ${entry[0]} refers to its event: read it from its stream`);
  return parseEnvelope(content.copy);
}

/** A log entry names an event its aggregate's stream does not hold: a corrupt log, never skipped. */
class MissingEventError extends Error {
  constructor(entryId: string | undefined, aggregateType: string, aggregateId: string, version: number) {
    super(
      `log entry ${entryId ?? '(read by a script)'} refers to ${aggregateType} ${aggregateId} version ${version}, which its stream does not hold`,
    );
  }
}

/**
 * The entries after `from` (partition -> last id passed) of each partition named, at most `count`
 * from each, merged by entry id. A partition that filled its batch may hold entries older than
 * another partition's later ones: only entries up to the oldest last entry of the full batches
 * are returned (the rest is read again next time), so a merged batch never puts a later entry
 * before an earlier one it has not read yet. Entry ids are the appending node's clock: on one
 * server the order is the append order; across cluster nodes, as good as their clocks agree.
 * One XRANGE per partition (one slot each, so it runs on a cluster), sent together.
 */
export async function readLogAfter(
  redis: RedisClient,
  keys: Keys,
  open: EnvelopeOpener,
  from: ReadonlyMap<number, EntryId>,
  count: number,
): Promise<LogBatch> {
  const partitions = [...from.keys()];
  const replies = await Promise.all(
    partitions.map(
      (partition) =>
        redis.xrange(
          keys.logPartition(partition),
          `(${formatEntryId(from.get(partition) as EntryId)}`,
          '+',
          'COUNT',
          count,
        ) as Promise<RawEntry[]>,
    ),
  );
  let watermark: EntryId | undefined;
  const raw: { partition: number; id: EntryId; entry: RawEntry }[] = [];
  partitions.forEach((partition, i) => {
    const reply = replies[i] ?? [];
    const last = reply.at(-1);
    if (last && reply.length >= count) {
      const lastId = parseEntryId(last[0]);
      if (!watermark || compareEntryIds(lastId, watermark) < 0) watermark = lastId;
    }
    for (const entry of reply) raw.push({ partition, id: parseEntryId(entry[0]), entry });
  });
  const kept = raw
    .filter((entry) => !watermark || compareEntryIds(entry.id, watermark) <= 0)
    .sort((a, b) => compareEntryIds(a.id, b.id) || a.partition - b.partition);
  const opened = await open(
    await resolveLogEntries(
      redis,
      keys,
      kept.map((entry) => entry.entry),
    ),
  );
  return {
    entries: kept.map((entry, i) => ({
      partition: entry.partition,
      id: entry.id,
      envelope: opened[i] as EventEnvelope,
    })),
    more: watermark !== undefined,
  };
}

/**
 * The last entry id ever appended to every partition ({0, 0} for none): the position "now". Not the
 * last entry there: a partition trimmed empty (LOG_RETENTION) still ends where it ended.
 */
export async function logEnds(redis: RedisClient, keys: Keys, partitions: number): Promise<EntryId[]> {
  const counters = await Promise.all(
    Array.from({ length: partitions }, (_, partition) =>
      partitionCounters(redis, keys.logPartition(partition)),
    ),
  );
  return counters.map(({ lastId }) => parseEntryId(lastId));
}

/**
 * A log partition's last entry id ever appended (`0-0` for none) and how many entries were ever
 * appended to it, in one read (XINFO STREAM): neither goes down when the partition is trimmed.
 */
export async function partitionCounters(
  redis: RedisClient,
  partitionKey: string,
): Promise<{ readonly lastId: string; readonly entriesAdded: number }> {
  registerScripts(redis, EVENT_STORE_SCRIPTS);
  const [lastId, entriesAdded] = await redis.logPartitionCounters(partitionKey);
  return { lastId, entriesAdded: Number(entriesAdded) };
}
