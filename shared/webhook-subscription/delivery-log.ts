import type { RedisClient } from '../redis/connections';
import type { Keys } from '../redis/keys';

/** What came of one attempt: delivered (2xx), failed and to be retried, or failed for good. */
export const DELIVERY_STATUSES = ['delivered', 'retrying', 'failed'] as const;
export type DeliveryStatus = (typeof DELIVERY_STATUSES)[number];

/** One attempt, as the delivery log keeps it and GetWebhookDeliveries answers it. */
export interface DeliveryAttempt {
  readonly eventId: string;
  readonly eventType: string;
  /** 1 for the first attempt at the event (a replay starts again at 1). */
  readonly attempt: number;
  /** When the attempt ended (ISO 8601). */
  readonly at: string;
  readonly status: DeliveryStatus;
  /** The receiver's HTTP status, or null when no answer came. */
  readonly httpStatus: number | null;
  /** The network error (or the refusal of the target), or null when an answer came. */
  readonly error: string | null;
  readonly durationMs: number;
}

/**
 * Entries one XREVRANGE reads while a page steps over `skip`: neither Redis nor the ingress's event
 * loop is held for more than about a millisecond at a time, however deep the page.
 */
const ENTRIES_PER_READ = 1_000;

type StreamEntry = [id: string, fields: string[]];

/** The one member of the `indexed-from` sorted set. */
const INDEXED_FROM = 'from';
/**
 * A stream id as a score: its millisecond times 1,024 plus its sequence (a double holds that
 * exactly until the year 2248). A sequence past 1,023 in one millisecond counts as 1,023: the mark
 * can only come out earlier, never later, than the entry.
 */
const SEQUENCES_PER_MS = 1_024;

function scoreOf(id: string): number {
  const [ms = '0', seq = '0'] = id.split('-');
  return Number(ms) * SEQUENCES_PER_MS + Math.min(Number(seq), SEQUENCES_PER_MS - 1);
}

function idOf(score: number): string {
  return `${Math.floor(score / SEQUENCES_PER_MS)}-${score % SEQUENCES_PER_MS}`;
}

function attemptOf([, fields]: StreamEntry): DeliveryAttempt {
  return JSON.parse(fields[1] ?? 'null') as DeliveryAttempt;
}

/**
 * The delivery log: one Redis stream per subscription, an entry per attempt, and beside it one
 * stream per status with the same attempts, each trimmed by age (MINID), so each holds
 * `retentionMs` of attempts and nothing older. A page is read from the stream it lists, newest
 * first, and costs what it returns and skips, not the log's length (ADR 0049): a read of the whole
 * log held Redis and the ingress for 0.2 s after 4 minutes of deliveries, and every read waiting
 * for a version waited with it.
 */
export class DeliveryLog {
  /** Subscriptions whose `indexed-from` mark this process has seen set. */
  private readonly indexed = new Set<string>();

  constructor(
    private readonly redis: RedisClient,
    private readonly keys: Keys,
    private readonly retentionMs: number,
  ) {}

  async record(subscriptionId: string, attempt: DeliveryAttempt): Promise<void> {
    const oldest = `${Date.now() - this.retentionMs}-0`;
    const entry = JSON.stringify(attempt);
    const written = await this.redis
      .multi()
      .xadd(this.keys.webhookDeliveries(subscriptionId), 'MINID', '~', oldest, '*', 'attempt', entry)
      .xadd(
        this.keys.webhookDeliveriesOfStatus(subscriptionId, attempt.status),
        'MINID',
        '~',
        oldest,
        '*',
        'attempt',
        entry,
      )
      .exec();
    const id = written?.[0]?.[1];
    if (this.indexed.has(subscriptionId) || typeof id !== 'string') return;
    // After the entry, not with it: until this is set, the log's entries count as unindexed. LT:
    // another replica's first entry, written at the same time, may be the earlier.
    const mark = this.keys.webhookDeliveriesIndexedFrom(subscriptionId);
    await this.redis.zadd(mark, 'LT', scoreOf(id), INDEXED_FROM);
    this.indexed.add(subscriptionId);
  }

  /**
   * Attempts newest first, `skip` then `take`, optionally of one status; with the number that
   * match.
   */
  async read(
    subscriptionId: string,
    skip: number,
    take: number,
    status?: DeliveryStatus,
  ): Promise<{ readonly totalCount: number; readonly items: DeliveryAttempt[] }> {
    const oldest = `${Date.now() - this.retentionMs}-0`;
    if (status && !(await this.statusStreamsHoldAll(subscriptionId, oldest))) {
      return this.readWholeLog(subscriptionId, oldest, skip, take, status);
    }
    const key = status
      ? this.keys.webhookDeliveriesOfStatus(subscriptionId, status)
      : this.keys.webhookDeliveries(subscriptionId);
    // Exactly the retention: writes trim whole stream nodes (`~`), and an idle log is not written.
    // Sent together, one round trip: the connection keeps their order, so the count is the trimmed one.
    const [, totalCount] = await Promise.all([this.redis.xtrim(key, 'MINID', oldest), this.redis.xlen(key)]);
    const items = skip >= totalCount ? [] : await this.page(key, skip, take);
    return { totalCount, items };
  }

  /** `take` entries after the newest `skip`, read in bounded steps. */
  private async page(key: string, skip: number, take: number): Promise<DeliveryAttempt[]> {
    const items: DeliveryAttempt[] = [];
    let toSkip = skip;
    let end = '+';
    while (items.length < take) {
      const count = Math.min(ENTRIES_PER_READ, toSkip + take - items.length);
      const entries = (await this.redis.xrevrange(key, end, '-', 'COUNT', count)) as StreamEntry[];
      for (const entry of entries.slice(Math.min(toSkip, entries.length))) items.push(attemptOf(entry));
      toSkip = Math.max(0, toSkip - entries.length);
      const last = entries.at(-1);
      if (!last || entries.length < count) break;
      end = `(${last[0]}`;
    }
    return items.slice(0, take);
  }

  /**
   * True when the status streams hold every retained attempt: the log has none older than the
   * first entry written to them (a log kept from before they existed holds such attempts for up to
   * its retention).
   */
  private async statusStreamsHoldAll(subscriptionId: string, oldest: string): Promise<boolean> {
    const from = await this.redis.zscore(
      this.keys.webhookDeliveriesIndexedFrom(subscriptionId),
      INDEXED_FROM,
    );
    const log = this.keys.webhookDeliveries(subscriptionId);
    if (from === null) return (await this.redis.xlen(log)) === 0;
    const older = await this.redis.xrange(log, oldest, `(${idOf(Number(from))}`, 'COUNT', 1);
    return older.length === 0;
  }

  /** The log's attempts of one status from before the status streams: the whole log, filtered here. */
  private async readWholeLog(
    subscriptionId: string,
    oldest: string,
    skip: number,
    take: number,
    status: DeliveryStatus,
  ): Promise<{ readonly totalCount: number; readonly items: DeliveryAttempt[] }> {
    const entries = (await this.redis.xrevrange(
      this.keys.webhookDeliveries(subscriptionId),
      '+',
      oldest,
    )) as StreamEntry[];
    const matching = entries.map(attemptOf).filter((attempt) => attempt.status === status);
    return { totalCount: matching.length, items: matching.slice(skip, skip + take) };
  }
}
