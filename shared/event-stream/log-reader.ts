import { type EventEnvelope, parseEnvelope } from '../event-store/envelope';
import type { RedisClient } from '../redis/connections';
import type { Keys } from '../redis/keys';
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

type RawEntry = [id: string, fields: string[]];

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
  const raw: { partition: number; id: EntryId; json: string }[] = [];
  partitions.forEach((partition, i) => {
    const reply = replies[i] ?? [];
    const last = reply.at(-1);
    if (last && reply.length >= count) {
      const lastId = parseEntryId(last[0]);
      if (!watermark || compareEntryIds(lastId, watermark) < 0) watermark = lastId;
    }
    for (const [id, fields] of reply) {
      raw.push({ partition, id: parseEntryId(id), json: fields[1] ?? 'null' });
    }
  });
  const kept = raw
    .filter((entry) => !watermark || compareEntryIds(entry.id, watermark) <= 0)
    .sort((a, b) => compareEntryIds(a.id, b.id) || a.partition - b.partition);
  const opened = await open(kept.map((entry) => parseEnvelope(entry.json)));
  return {
    entries: kept.map((entry, i) => ({
      partition: entry.partition,
      id: entry.id,
      envelope: opened[i] as EventEnvelope,
    })),
    more: watermark !== undefined,
  };
}

/** The last entry id of every partition now ({0, 0} for an empty one): the position "now". */
export async function logEnds(redis: RedisClient, keys: Keys, partitions: number): Promise<EntryId[]> {
  const replies = await Promise.all(
    Array.from(
      { length: partitions },
      (_, partition) =>
        redis.xrevrange(keys.logPartition(partition), '+', '-', 'COUNT', 1) as Promise<RawEntry[]>,
    ),
  );
  return replies.map((reply) => {
    const last = reply[0];
    return last ? parseEntryId(last[0]) : { ms: 0, seq: 0 };
  });
}
