import { RateLimiterRedis, RateLimiterRes } from 'rate-limiter-flexible';

import type { Config } from '../../shared/config';
import { AppError } from '../../shared/errors';
import type { RedisClient } from '../../shared/redis/connections';
import type { Keys } from '../../shared/redis/keys';

/**
 * Caps the requests one account makes per window, counted in Redis so the cap holds across every
 * ingress replica. It runs once the caller is authenticated, so one noisy integration slows only
 * itself; anonymous traffic meets the sign-in throttle instead.
 */
export class AccountRateLimit {
  private readonly limiter: RateLimiterRedis | undefined;

  constructor(redis: RedisClient, keys: Keys, settings: Config['rateLimit']) {
    if (settings.requestsPerAccount === 0) return;
    this.limiter = new RateLimiterRedis({
      storeClient: redis,
      keyPrefix: keys.accountRequestsPrefix(),
      points: settings.requestsPerAccount,
      duration: settings.windowSeconds,
      // An account over its limit is refused from memory until its window ends: the requests of
      // a client hammering past the limit cost Redis nothing.
      inMemoryBlockOnConsumed: settings.requestsPerAccount,
      rejectIfRedisNotReady: true,
    });
  }

  /** Counts one request of the account; throws the 429 problem once it is over the limit. */
  async consume(userId: string): Promise<void> {
    if (!this.limiter) return;
    try {
      await this.limiter.consume(userId);
    } catch (error) {
      if (!(error instanceof RateLimiterRes)) throw error;
      throw new AppError('TOO_MANY_REQUESTS', 'Too many requests for this account. Try again later.', 429, {
        retryAfterSeconds: Math.max(1, Math.ceil(error.msBeforeNext / 1000)),
      });
    }
  }
}
