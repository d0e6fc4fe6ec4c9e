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
/**
 * While the master holding an account's counter is known to be away (a failover, ADR 0030), each
 * replica admits the account this share of its limit per window, uncounted, and refuses the rest:
 * a failover never lifts the limit, and the caller cannot open it (ADR 0034).
 */
export const FAIL_OPEN_SHARE_OF_LIMIT = 1 / 10;

/** How a reservation ended: a lease kept for the account's requests, or one request admitted uncounted. */
type Reservation = 'leased' | 'admitted uncounted';

/** What one replica still admits of an account uncounted while its counter's master is away. */
interface OpenAllowance {
  left: number;
  windowEndsAtMs: number;
}

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
  private readonly reserving = new Map<string, Promise<Reservation>>();
  private readonly openAllowances = new LRUCache<string, OpenAllowance>({ max: MAX_LEASED_ACCOUNTS });
  private readonly windowMs: number;

  constructor(
    private readonly redis: RedisClient,
    private readonly keys: Keys,
    settings: Config['rateLimit'],
    private readonly metrics?: Partial<RateLimitMetrics>,
  ) {
    this.limit = settings.requestsPerAccount;
    this.windowMs = settings.windowSeconds * 1000;
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
        // Admitted from the allowance: this request only; one that waited asks for itself.
        if ((await reservation) === 'admitted uncounted') return;
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
   * master is known to be away (its connection is down, or Redis says the cluster or the slot is
   * not served: a failover; Redis itself is ready, its other masters serve) the request is admitted
   * from a small local allowance rather than held for the failover (ADR 0030, 0034). Elapsed time
   * alone never opens it: a slow answer is waited for, since a caller can stall this process's event
   * loop (a large body) and make any timer here fire late.
   */
  private async reserve(
    limiter: RateLimiterRedis,
    userId: string,
    spent: Lease | undefined,
  ): Promise<Reservation> {
    // A new window (or an account new to this process) is assumed untouched: if the others used
    // it meanwhile, a too-large ask is still answered exactly below.
    const remaining = spent?.remainingInWindow ?? this.limit;
    const size = Math.min(this.maxLease, Math.max(1, Math.floor(remaining * LEASE_SHARE_OF_REMAINING)));
    const key = this.keys.accountRequests(userId);
    if (!this.counterMasterReady(key)) return this.admitUncounted(userId);
    try {
      const granted = await limiter.consume(key, size);
      this.keep(userId, size, granted.remainingPoints, granted.msBeforeNext);
      return 'leased';
    } catch (error) {
      if (isMasterKnownAway(error)) return this.admitUncounted(userId);
      if (!(error instanceof RateLimiterRes)) throw error;
      // Redis added the whole ask and refused it for crossing the limit; the points that were
      // left before it are still ours to spend. (A refusal from memory says consumedPoints 0.)
      const leftBefore = error.consumedPoints > 0 ? this.limit - (error.consumedPoints - size) : 0;
      if (leftBefore >= 1) {
        this.keep(userId, leftBefore, 0, error.msBeforeNext);
        return 'leased';
      }
      throw tooManyRequests(error.msBeforeNext);
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

  /**
   * Admits one request of `userId` uncounted, from this replica's allowance for the window
   * ({@link FAIL_OPEN_SHARE_OF_LIMIT} of the limit), or throws the 429 problem once it is spent.
   */
  private admitUncounted(userId: string): Reservation {
    const now = Date.now();
    let allowance = this.openAllowances.get(userId);
    if (!allowance || allowance.windowEndsAtMs <= now) {
      allowance = {
        left: Math.max(1, Math.floor(this.limit * FAIL_OPEN_SHARE_OF_LIMIT)),
        windowEndsAtMs: now + this.windowMs,
      };
      this.openAllowances.set(userId, allowance);
    }
    if (allowance.left <= 0) throw tooManyRequests(allowance.windowEndsAtMs - now);
    allowance.left -= 1;
    this.metrics?.recordRateLimitFailOpen?.();
    return 'admitted uncounted';
  }

  private keep(userId: string, unspent: number, remainingInWindow: number, msBeforeNext: number): void {
    this.leases.set(userId, { unspent, remainingInWindow, windowEndsAtMs: Date.now() + msBeforeNext });
  }
}

/** The 429 problem of an account over its limit, with the seconds until it may try again. */
function tooManyRequests(msBeforeNext: number): AppError {
  return new AppError('TOO_MANY_REQUESTS', 'Too many requests for this account. Try again later.', 429, {
    retryAfterSeconds: Math.max(1, Math.ceil(msBeforeNext / 1000)),
  });
}

/**
 * Whether a failed reservation says the counter's master is away (its connection closed, the
 * cluster or the slot not served, a slot moving), not merely slow: a command timeout is elapsed
 * time on this process's clock, which a caller stalling the event loop can make pass.
 */
function isMasterKnownAway(error: unknown): boolean {
  return isRedisUnavailable(error) && !/Command timed out/.test((error as Error).message);
}
