import { LRUCache } from 'lru-cache';
import { RateLimiterRedis, RateLimiterRes } from 'rate-limiter-flexible';

import type { Config } from '../../shared/config';
import { AppError } from '../../shared/errors';
import type { RateLimitMetrics } from '../../shared/metrics/metrics';
import { isRedisUnavailable, masterHolding, type RedisClient } from '../../shared/redis/connections';
import type { Keys } from '../../shared/redis/keys';

/**
 * A lease is at most this share of the limit, so the points a replica reserved and never spent
 * (its account went quiet before the window ended) refuse the account's other requests at most
 * this much early, per replica.
 */
const LEASE_SHARE_OF_LIMIT = 1 / 100;
/** A lease is at most this share of what the deployment has left, so leases shrink near the limit. */
const LEASE_SHARE_OF_REMAINING = 1 / 20;
/** Beyond this a lease saves nothing measurable: one Redis call per thousand requests. */
const MAX_LEASE = 1_000;
/** Accounts whose leases one process remembers; the least recently active are forgotten first. */
const MAX_LEASED_ACCOUNTS = 10_000;
/** When the account's counter is not counted (ADR 0030). */
export const ACCOUNT_RATE_LIMIT_FAIL_OPEN = Object.freeze({
  /**
   * How long a reservation may wait for the counter's master before the request is admitted
   * uncounted: far below a command's 2 s timeout and a failover's seconds, far above a round trip.
   */
  afterMs: 200,
  /** How long one process then admits the account's requests uncounted before asking again. */
  forMs: 1_000,
});

/** Points one process reserved in Redis for one account, in one window. */
interface Lease {
  /** Reserved and not spent yet: requests this process admits without asking Redis. */
  unspent: number;
  /** What the whole deployment had left of the account's limit when Redis last answered. */
  remainingInWindow: number;
  /** When the window the reservation counts in ends; the unspent points end with it. */
  windowEndsAtMs: number;
}

/**
 * Caps the requests one account makes per window, counted in Redis so the cap holds across
 * replicas. It runs once the caller is authenticated, so a noisy integration slows only itself;
 * anonymous traffic meets the sign-in throttle. Asking Redis per request is costly, so each replica
 * reserves points in leases and admits requests from them in memory; a lease shrinks to one point
 * near a small or nearly spent limit, so the count stays exact where it matters (ADR 0005).
 */
export class AccountRateLimit {
  private readonly limiter: RateLimiterRedis | undefined;
  private readonly limit: number;
  private readonly maxLease: number;
  private readonly leases = new LRUCache<string, Lease>({ max: MAX_LEASED_ACCOUNTS });
  /** One reservation in flight per account: requests arriving meanwhile wait for it. */
  private readonly reserving = new Map<string, Promise<void>>();

  constructor(
    private readonly redis: RedisClient,
    private readonly keys: Keys,
    settings: Config['rateLimit'],
    private readonly metrics?: Partial<RateLimitMetrics>,
  ) {
    this.limit = settings.requestsPerAccount;
    this.maxLease = Math.min(MAX_LEASE, Math.max(1, Math.floor(this.limit * LEASE_SHARE_OF_LIMIT)));
    if (this.limit === 0) return;
    this.limiter = new RateLimiterRedis({
      storeClient: redis,
      // The whole key comes from keys.accountRequests (the account's partition tag in it).
      keyPrefix: '',
      points: this.limit,
      duration: settings.windowSeconds,
      // An account over its limit is refused from memory until its window ends: the requests of
      // a client hammering past the limit cost Redis nothing.
      inMemoryBlockOnConsumed: this.limit,
      rejectIfRedisNotReady: true,
    });
  }

  /** Counts one request of the account; throws the 429 problem once it is over the limit. */
  async consume(userId: string): Promise<void> {
    const limiter = this.limiter;
    if (!limiter) return;
    // A lease does not outlive Redis: while Redis is away the account cache hears of no change (a
    // removed account, a withdrawn role), so a request is refused with the 503 problem, as it was
    // when every request asked Redis (rate-limiter-flexible's own words for it).
    if (this.redis.status !== 'ready') throw new Error('Redis connection is not ready');
    for (;;) {
      const lease = this.currentLease(userId);
      if (lease && lease.unspent > 0) {
        lease.unspent -= 1;
        return;
      }
      const inFlight = this.reserving.get(userId);
      if (inFlight) {
        // Its outcome is ours too: a refusal refuses every request that waited for it.
        await inFlight;
        continue;
      }
      const reservation = this.reserve(limiter, userId, lease);
      this.reserving.set(userId, reservation);
      try {
        await reservation;
      } finally {
        this.reserving.delete(userId);
      }
    }
  }

  private currentLease(userId: string): Lease | undefined {
    const lease = this.leases.get(userId);
    return lease && lease.windowEndsAtMs > Date.now() ? lease : undefined;
  }

  /**
   * Reserves a lease of at least one point in Redis, or throws the 429 problem. While the counter's
   * master is away (a failover: Redis itself is ready, its other masters serve) the request is
   * admitted at once, uncounted, rather than held for the failover (ADR 0030).
   */
  private async reserve(limiter: RateLimiterRedis, userId: string, spent: Lease | undefined): Promise<void> {
    // A new window (or an account new to this process) is assumed untouched: if the others used
    // it meanwhile, a too-large ask is still answered exactly below.
    const remaining = spent?.remainingInWindow ?? this.limit;
    const size = Math.min(this.maxLease, Math.max(1, Math.floor(remaining * LEASE_SHARE_OF_REMAINING)));
    const key = this.keys.accountRequests(userId);
    if (!this.counterMasterReady(key)) return this.failOpen(userId);
    try {
      const granted = await withinFailOpenBound(limiter.consume(key, size));
      if (granted === TIMED_OUT) return this.failOpen(userId);
      this.keep(userId, size, granted.remainingPoints, granted.msBeforeNext);
    } catch (error) {
      if (isRedisUnavailable(error)) return this.failOpen(userId);
      if (!(error instanceof RateLimiterRes)) throw error;
      // Redis added the whole ask and refused it for crossing the limit; the points that were
      // left before it are still ours to spend. (A refusal from memory says consumedPoints 0.)
      const leftBefore = error.consumedPoints > 0 ? this.limit - (error.consumedPoints - size) : 0;
      if (leftBefore >= 1) {
        this.keep(userId, leftBefore, 0, error.msBeforeNext);
        return;
      }
      throw new AppError('TOO_MANY_REQUESTS', 'Too many requests for this account. Try again later.', 429, {
        retryAfterSeconds: Math.max(1, Math.ceil(error.msBeforeNext / 1000)),
      });
    }
  }

  /** False when the connection to the master holding `key` is down (one server: the connection). */
  private counterMasterReady(key: string): boolean {
    try {
      return masterHolding(this.redis, key).status === 'ready';
    } catch {
      return false; // no known master serves the slot: it is moving
    }
  }

  /** Admits requests of `userId` uncounted for a while: its counter's master is away. */
  private failOpen(userId: string): void {
    this.metrics?.recordRateLimitFailOpen?.();
    this.keep(userId, this.limit, this.limit, ACCOUNT_RATE_LIMIT_FAIL_OPEN.forMs);
  }

  private keep(userId: string, unspent: number, remainingInWindow: number, msBeforeNext: number): void {
    this.leases.set(userId, { unspent, remainingInWindow, windowEndsAtMs: Date.now() + msBeforeNext });
  }
}

const TIMED_OUT = Symbol('timed out');

/** The reservation's answer, or TIMED_OUT once the fail-open bound passed (its late end ignored). */
async function withinFailOpenBound<T>(reservation: Promise<T>): Promise<T | typeof TIMED_OUT> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<typeof TIMED_OUT>((resolve) => {
    timer = setTimeout(() => resolve(TIMED_OUT), ACCOUNT_RATE_LIMIT_FAIL_OPEN.afterMs);
  });
  // A late refusal or failure has no one to tell.
  reservation.catch(() => undefined);
  try {
    return await Promise.race([reservation, timeout]);
  } finally {
    clearTimeout(timer);
  }
}
