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
 * The delivery log: one Redis stream per subscription, an entry per attempt, trimmed by age
 * (MINID) as it is written, so it holds `retentionMs` of attempts and nothing older.
 */
export class DeliveryLog {
  constructor(
    private readonly redis: RedisClient,
    private readonly keys: Keys,
    private readonly retentionMs: number,
  ) {}

  async record(subscriptionId: string, attempt: DeliveryAttempt): Promise<void> {
    const oldest = Date.now() - this.retentionMs;
    await this.redis.xadd(
      this.keys.webhookDeliveries(subscriptionId),
      'MINID',
      '~',
      `${oldest}-0`,
      '*',
      'attempt',
      JSON.stringify(attempt),
    );
  }

  /**
   * Attempts newest first, `skip` then `take`, optionally of one status; with the number that
   * match. Reads the whole log (bounded by its retention), filtered here.
   */
  async read(
    subscriptionId: string,
    skip: number,
    take: number,
    status?: DeliveryStatus,
  ): Promise<{ readonly totalCount: number; readonly items: DeliveryAttempt[] }> {
    const key = this.keys.webhookDeliveries(subscriptionId);
    const oldest = `${Date.now() - this.retentionMs}-0`;
    const entries = await this.redis.xrevrange(key, '+', oldest);
    const all = entries.map(([, fields]) => JSON.parse(fields[1] ?? 'null') as DeliveryAttempt);
    const matching = status ? all.filter((attempt) => attempt.status === status) : all;
    return { totalCount: matching.length, items: matching.slice(skip, skip + take) };
  }
}
