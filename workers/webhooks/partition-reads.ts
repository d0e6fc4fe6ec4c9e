import { ALL_ENVELOPE_CODECS } from '../../shared/envelope-codecs';
import type { EventEnvelope } from '../../shared/event-store/envelope';
import { EnvelopeCodecs } from '../../shared/event-store/envelope-codec';
import { resolveLogEntries } from '../../shared/event-stream/log-reader';
import type { RedisClient } from '../../shared/redis/connections';
import type { Keys } from '../../shared/redis/keys';

/**
 * User events' personal fields are sealed at rest (ADR 0014): opened as the projector opens them,
 * so an erased account's fields go out as null, never as they were.
 */
const SEALED_ENVELOPES = new EnvelopeCodecs(ALL_ENVELOPE_CODECS);

/** One log entry as a lane delivers it: its id in the partition and the event, opened. */
export interface PartitionEntry {
  readonly id: string;
  readonly event: EventEnvelope;
}

/**
 * What is read after the entries, in the same step (the webhook subscriptions' record versions):
 * whatever was answered before an entry was appended is in it.
 */
export type AfterRead = () => Promise<ReadonlyMap<string, number>>;

/** Entries of a partition in order, whether more may follow them now, and what was read after them. */
export interface PartitionBatch {
  readonly entries: readonly PartitionEntry[];
  readonly more: boolean;
  readonly readAfter: ReadonlyMap<string, number>;
}

/** The last read of one partition: the entries that followed `after`, in order, with nothing left out. */
interface Run {
  readonly after: string;
  readonly entries: readonly PartitionEntry[];
  /** Index of each entry's id in `entries`. */
  readonly index: ReadonlyMap<string, number>;
  /** The read came back with a full batch: there may be more after its last entry. */
  readonly full: boolean;
  readonly readAt: number;
  readonly readAfter: ReadonlyMap<string, number>;
}

/**
 * Reads a partition's entries once for all the lanes that deliver it. The lanes of a partition
 * usually stand at the same entry and ask together when an append is announced, so one XRANGE, one
 * parse and one opening of sealed fields serve them all (their subscriptions' versions read with
 * them); a lane asking for anything else reads for itself. A read is kept briefly, so an event is
 * opened close to when it is sent (an erasure is an append): dropped on an announcement for its
 * partition or after `maxAgeMs`, and never kept if an announcement came while it was in flight.
 */
export class PartitionReads {
  private readonly runs = new Map<number, Run>();
  /** Bumped by every announcement of the partition. */
  private readonly generations = new Map<number, number>();
  private readonly inFlight = new Map<string, Promise<PartitionBatch>>();

  constructor(
    private readonly redis: RedisClient,
    private readonly keys: Keys,
    private readonly batchSize: number,
    private readonly afterRead: AfterRead = () => Promise.resolve(new Map()),
    private readonly maxAgeMs = 1_000,
  ) {}

  /** An append to `partition` was announced: what was read of it may be missing that entry. */
  announced(partition: number): void {
    this.generations.set(partition, (this.generations.get(partition) ?? 0) + 1);
    this.runs.delete(partition);
  }

  /** Forgets every read (the subscriptions or the partitions owned changed). */
  clear(): void {
    this.runs.clear();
  }

  /**
   * Up to `batchSize` entries of `partition` after the entry id `after`, in order: from the last
   * read when it holds `after` and what follows it, else from Redis (one read for all who ask the
   * same at once).
   */
  async after(partition: number, after: string): Promise<PartitionBatch> {
    const kept = this.fromLastRead(partition, after);
    if (kept) return kept;
    const key = `${partition}:${after}`;
    let read = this.inFlight.get(key);
    if (!read) {
      read = this.read(partition, after).finally(() => this.inFlight.delete(key));
      this.inFlight.set(key, read);
    }
    return read;
  }

  private fromLastRead(partition: number, after: string): PartitionBatch | undefined {
    const run = this.runs.get(partition);
    if (!run || Date.now() - run.readAt > this.maxAgeMs) return undefined;
    const start = after === run.after ? 0 : (run.index.get(after) ?? -1) + 1;
    if (start === 0 && after !== run.after) return undefined;
    // Past the end of a full batch lies what was not read yet: read on from there.
    if (start >= run.entries.length && run.full) return undefined;
    const entries = run.entries.slice(start, start + this.batchSize);
    return { entries, more: run.full, readAfter: run.readAfter };
  }

  private async read(partition: number, after: string): Promise<PartitionBatch> {
    const generation = this.generations.get(partition) ?? 0;
    const readAt = Date.now();
    const raw = await this.redis.xrange(
      this.keys.logPartition(partition),
      `(${after}`,
      '+',
      'COUNT',
      this.batchSize,
    );
    const events = await SEALED_ENVELOPES.open(
      this.redis,
      this.keys,
      await resolveLogEntries(this.redis, this.keys, raw),
    );
    const entries = raw.map(([id], i) => ({ id, event: events[i] as EventEnvelope }));
    const full = entries.length >= this.batchSize;
    const readAfter = entries.length > 0 ? await this.afterRead() : new Map<string, number>();
    if ((this.generations.get(partition) ?? 0) === generation) {
      this.runs.set(partition, {
        after,
        entries,
        index: new Map(entries.map((entry, i) => [entry.id, i])),
        full,
        readAt,
        readAfter,
      });
    }
    return { entries, more: full, readAfter };
  }
}
