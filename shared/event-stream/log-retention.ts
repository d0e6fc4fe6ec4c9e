import { EVENT_STORE_SCRIPTS } from '../event-store/event-store.scripts';
import type { Logger } from '../logger';
import type { RedisClient } from '../redis/connections';
import type { Keys } from '../redis/keys';
import { LOG_PARTITIONS } from '../redis/partitions';
import { registerScripts } from '../redis/scripts';
import {
  BEFORE_EVERYTHING,
  compareEntryIds,
  type EntryId,
  formatEntryId,
  parseEntryId,
} from './log-position';

/**
 * A reader of the global log that must see every entry (a projection, a webhook subscription):
 * trimming waits for it.
 */
export interface LogConsumer {
  readonly name: string;
  /**
   * For each partition (index = partition), the oldest position it still reads after: every
   * entry after it is still needed. BEFORE_EVERYTHING when it needs the partition from its start.
   */
  oldestPositions(): Promise<readonly EntryId[]>;
}

/** A stored checkpoint as a position; absent or unreadable: before everything (nothing trimmed). */
export function positionOf(checkpoint: string | null | undefined): EntryId {
  if (!checkpoint) return BEFORE_EVERYTHING;
  try {
    return parseEntryId(checkpoint);
  } catch {
    return BEFORE_EVERYTHING;
  }
}

/** What one trim did, per partition: the least id kept, and how many entries went. */
export interface LogTrim {
  readonly partition: number;
  readonly keptFrom: string;
  readonly removed: number;
}

/**
 * Trims every partition of the global log (LOG_RETENTION, ADR 0020): an entry goes when it is older
 * than `retentionMs` AND every consumer has passed it. Each partition's cut is the least of the
 * window's start and every consumer's position in it (the entry at a consumer's position is kept).
 * The aggregate streams are never trimmed: they keep every event, so a projection is rebuilt from
 * them (rebuild.ts) and a reference never dangles. Safe to run from several replicas at once.
 */
export async function trimLog(
  redis: RedisClient,
  keys: Keys,
  consumers: readonly LogConsumer[],
  retentionMs: number,
  now = Date.now(),
): Promise<LogTrim[]> {
  registerScripts(redis, EVENT_STORE_SCRIPTS);
  const cuts: EntryId[] = Array.from({ length: LOG_PARTITIONS }, () => ({
    ms: Math.max(0, now - retentionMs),
    seq: 0,
  }));
  for (const consumer of consumers) {
    const positions = await consumer.oldestPositions();
    cuts.forEach((cut, partition) => {
      const position = positions[partition] ?? BEFORE_EVERYTHING;
      if (compareEntryIds(position, cut) < 0) cuts[partition] = position;
    });
  }
  return Promise.all(
    cuts.map(async (cut, partition) => {
      const keptFrom = formatEntryId(cut);
      const removed =
        compareEntryIds(cut, BEFORE_EVERYTHING) === 0
          ? 0
          : await redis.trimLogPartition(
              keys.logPartition(partition),
              keys.logPartitionTrimmedThrough(partition),
              keptFrom,
            );
      return { partition, keptFrom, removed };
    }),
  );
}

/**
 * For each partition, the id of the newest entry ever trimmed from it (BEFORE_EVERYTHING when none
 * was): a reader positioned before it would miss entries.
 */
export async function trimmedThrough(redis: RedisClient, keys: Keys): Promise<EntryId[]> {
  const values = await Promise.all(
    Array.from({ length: LOG_PARTITIONS }, (_, partition) =>
      redis.get(keys.logPartitionTrimmedThrough(partition)),
    ),
  );
  return values.map(positionOf);
}

/**
 * The partitions in which `position` lies before trimmed entries: resuming there would skip them.
 * Empty when nothing it needs was trimmed.
 */
export async function partitionsTrimmedPast(
  redis: RedisClient,
  keys: Keys,
  position: readonly EntryId[],
): Promise<number[]> {
  const trimmed = await trimmedThrough(redis, keys);
  return trimmed.flatMap((through, partition) =>
    compareEntryIds(position[partition] ?? BEFORE_EVERYTHING, through) < 0 ? [partition] : [],
  );
}

/** How often a worker trims the log when LOG_RETENTION is set. */
export const LOG_TRIM_INTERVAL_MS = 60_000;

/**
 * Trims the log every LOG_TRIM_INTERVAL_MS in a worker process (nothing when retention is
 * `forever`). A failed pass (Redis away) is logged and tried again at the next.
 */
export class LogTrimmer {
  private timer: NodeJS.Timeout | undefined;
  private running: Promise<unknown> | undefined;

  constructor(
    private readonly redis: RedisClient,
    private readonly keys: Keys,
    private readonly consumers: readonly LogConsumer[],
    private readonly retentionMs: number | null,
    private readonly logger: Logger,
    private readonly intervalMs = LOG_TRIM_INTERVAL_MS,
  ) {}

  start(): void {
    if (this.retentionMs === null || this.timer) return;
    const retentionMs = this.retentionMs;
    this.timer = setInterval(() => {
      if (this.running) return;
      this.running = trimLog(this.redis, this.keys, this.consumers, retentionMs)
        .then((trims) => {
          const removed = trims.reduce((sum, trim) => sum + trim.removed, 0);
          if (removed > 0) this.logger.info('log trimmed', { removed });
        })
        .catch((error: unknown) => {
          this.logger.warn('log trim failed', {
            error: error instanceof Error ? error.message : String(error),
          });
        })
        .finally(() => {
          this.running = undefined;
        });
    }, this.intervalMs);
    this.timer.unref();
  }

  async stop(): Promise<void> {
    clearInterval(this.timer);
    this.timer = undefined;
    await this.running;
  }
}
