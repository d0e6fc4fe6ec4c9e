import { ALL_DECIDERS } from '../../shared/event-store/all-deciders';
import { beginningPosition, compareEntryIds, type EntryId } from '../../shared/event-stream/log-position';
import {
  type EnvelopeOpener,
  logEnds,
  type LogEntry,
  readLogAfter,
} from '../../shared/event-stream/log-reader';
import type { Logger } from '../../shared/logger';
import type { RedisClient } from '../../shared/redis/connections';
import type { Keys } from '../../shared/redis/keys';
import { LOG_PARTITIONS, partitionOf } from '../../shared/redis/partitions';
import { WakeablePause } from '../../shared/wakeable-pause';

/** What the tail hands every batch it reads to. */
export interface TailReader {
  /**
   * Called synchronously with each batch, in the order read: entries at or before the reader's own
   * position in their partition are the reader's to skip (it may have read them itself).
   */
  deliver(entries: readonly LogEntry[]): void;
}

export interface LogTailOptions {
  /** Entries read per partition per read. */
  readonly batchSize: number;
  /**
   * How often every partition is read even when no append was announced: bounds how late an
   * entry is seen when its announcement was lost (the subscriber reconnecting).
   */
  readonly fallbackPollMs: number;
}

export const DEFAULT_LOG_TAIL_OPTIONS: LogTailOptions = { batchSize: 200, fallbackPollMs: 1_000 };

/**
 * The one reader of the global log's new entries in a process, fanned out to every live event
 * stream, so N streams cost one subscriber and one read per announced append (ADR 0016). It reads
 * an announced partition after its head (non-blocking XRANGE, one slot per read, so it runs on a
 * cluster) and every partition on a fallback interval. The head moves only in the same synchronous
 * step as the hand-out, so a stream joining at the head misses nothing and gets nothing twice.
 * Runs while it has users; the next user after the last starts it again with a fresh head.
 */
export class LogTail {
  private head: EntryId[] = beginningPosition();
  private readonly live = new Set<TailReader>();
  private users = 0;
  /** Bumped at every start and stop: a loop or a read of an older generation hands nothing out. */
  private generation = 0;
  private started: Promise<void> | undefined;
  private subscriber: RedisClient | undefined;
  private announced = new Set<number>();
  private fullPassAt = 0;
  private readonly pause = new WakeablePause();
  private closed = false;
  private readonly options: LogTailOptions;

  constructor(
    private readonly redis: RedisClient,
    private readonly keys: Keys,
    private readonly open: EnvelopeOpener,
    /** Opens the subscriber connection, once, when the first stream starts the tail. */
    private readonly newSubscriber: () => RedisClient,
    private readonly logger: Logger,
    options: Partial<LogTailOptions> = {},
  ) {
    this.options = { ...DEFAULT_LOG_TAIL_OPTIONS, ...options };
  }

  /**
   * Counts a stream as a user, starting the tail if it was idle; resolves once the head is the
   * log's end (or later). Rejects (and counts nothing) when Redis cannot be read.
   */
  async acquire(): Promise<void> {
    if (this.closed) throw new Error('the event stream tail is closed');
    this.users++;
    try {
      this.started ??= this.start();
      await this.started;
    } catch (error) {
      this.release();
      throw error;
    }
  }

  /** A stream left; the last one stops the tail. */
  release(): void {
    this.users = Math.max(0, this.users - 1);
    if (this.users === 0) this.stop();
  }

  /** Whether the subscriber connection was ever opened (a stream was admitted). */
  get subscribed(): boolean {
    return this.subscriber !== undefined;
  }

  /** The last entry id handed out in `partition`. */
  headOf(partition: number): EntryId {
    return this.head[partition] as EntryId;
  }

  /** From now on `reader` gets every batch; call in the same synchronous step as comparing with the head. */
  join(reader: TailReader): void {
    this.live.add(reader);
  }

  leave(reader: TailReader): void {
    this.live.delete(reader);
  }

  /** Stops reading and closes the subscriber. */
  async close(): Promise<void> {
    this.closed = true;
    this.stop();
    this.live.clear();
    const subscriber = this.subscriber;
    this.subscriber = undefined;
    await subscriber?.quit().catch(() => subscriber.disconnect());
  }

  private async start(): Promise<void> {
    const generation = ++this.generation;
    this.subscribe();
    const ends = await logEnds(this.redis, this.keys, LOG_PARTITIONS).catch((error: unknown) => {
      if (this.generation === generation) this.started = undefined;
      throw error;
    });
    if (this.generation !== generation) return;
    this.head = ends;
    this.fullPassAt = Date.now() + this.options.fallbackPollMs;
    void this.loop(generation);
  }

  private stop(): void {
    this.generation++;
    this.started = undefined;
    this.announced.clear();
    this.pause.wake();
  }

  /** Once per process: a channel per aggregate type, each message an aggregate id. */
  private subscribe(): void {
    if (this.subscriber) return;
    const subscriber = this.newSubscriber();
    this.subscriber = subscriber;
    subscriber.on('message', (_channel: string, aggregateId: string) => {
      this.announced.add(partitionOf(aggregateId));
      this.pause.wake();
    });
    const channels = [
      ...new Set(ALL_DECIDERS.map((decider) => this.keys.aggregateChanges(decider.aggregateType))),
    ];
    subscriber.subscribe(...channels).catch((error: unknown) => {
      this.logger.warn('event stream not subscribed to changes; polling', { error: String(error) });
    });
  }

  private async loop(generation: number): Promise<void> {
    let again: number[] = [];
    while (this.generation === generation) {
      const due = this.duePartitions(again);
      again = [];
      if (due.length > 0) {
        try {
          const batch = await readLogAfter(
            this.redis,
            this.keys,
            this.open,
            new Map(due.map((partition) => [partition, this.headOf(partition)])),
            this.options.batchSize,
          );
          if (this.generation !== generation) return;
          this.handOut(batch.entries);
          if (batch.more) again = due;
        } catch (error) {
          this.logger.warn('event stream read failed', {
            error: error instanceof Error ? error.message : String(error),
          });
          this.fullPassAt = 0;
          await sleep(500);
          continue;
        }
      }
      if (again.length === 0) await this.idle();
    }
  }

  /** Moves the head and hands the batch to every live reader, in one synchronous step. */
  private handOut(entries: readonly LogEntry[]): void {
    if (entries.length === 0) return;
    for (const entry of entries) {
      if (compareEntryIds(entry.id, this.headOf(entry.partition)) > 0) this.head[entry.partition] = entry.id;
    }
    for (const reader of [...this.live]) reader.deliver(entries);
  }

  /** Every partition when the fallback pass is due, else those announced (and those with more). */
  private duePartitions(again: readonly number[]): number[] {
    if (Date.now() >= this.fullPassAt) {
      this.fullPassAt = Date.now() + this.options.fallbackPollMs;
      this.announced.clear();
      return Array.from({ length: LOG_PARTITIONS }, (_, partition) => partition);
    }
    const due = new Set([...again, ...this.announced]);
    this.announced.clear();
    return [...due].sort((a, b) => a - b);
  }

  private async idle(): Promise<void> {
    if (this.announced.size > 0) return;
    const pauseMs = Math.max(0, this.fullPassAt - Date.now());
    await this.pause.for(pauseMs);
  }
}

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}
