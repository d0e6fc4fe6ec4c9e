import type { Redis } from 'ioredis';
import { RateLimiterRedis, RateLimiterRes } from 'rate-limiter-flexible';

import type { Config } from '../../shared/config';
import { AppError } from '../../shared/errors';
import type { Keys } from '../../shared/redis/keys';

/**
 * Counts failed sign-ins per account and per client address in Redis (so every replica sees the
 * same counts) and refuses further attempts with a 429 once either is over its limit.
 */
export class SignInThrottle {
  private readonly byAccount: RateLimiterRedis;
  private readonly byAddress: RateLimiterRedis;

  constructor(redis: Redis, keys: Keys, settings: Config['auth']) {
    const common = {
      storeClient: redis,
      duration: settings.failureWindowSeconds,
      rejectIfRedisNotReady: true,
    };
    this.byAccount = new RateLimiterRedis({
      ...common,
      keyPrefix: `${keys.authFailuresPrefix()}:account`,
      points: settings.maxFailuresPerAccount,
    });
    this.byAddress = new RateLimiterRedis({
      ...common,
      keyPrefix: `${keys.authFailuresPrefix()}:address`,
      points: settings.maxFailuresPerAddress,
    });
  }

  /** Throws the 429 when the account or the address has used up its failures. */
  async assertAllowed(accountKey: string, address: string): Promise<void> {
    const [account, client] = await Promise.all([
      this.byAccount.get(accountKey),
      this.byAddress.get(address),
    ]);
    const blocked = [
      [account, this.byAccount.points],
      [client, this.byAddress.points],
    ] as const;
    const waitMs = Math.max(
      0,
      ...blocked
        .filter(([res, points]) => res !== null && res.consumedPoints >= points)
        .map(([res]) => res?.msBeforeNext ?? 0),
    );
    if (waitMs > 0) {
      throw new AppError('TOO_MANY_REQUESTS', 'Too many failed sign-in attempts. Try again later.', 429, {
        retryAfterSeconds: Math.ceil(waitMs / 1000),
      });
    }
  }

  async recordFailure(accountKey: string, address: string): Promise<void> {
    await Promise.all([this.consume(this.byAccount, accountKey), this.consume(this.byAddress, address)]);
  }

  /** A correct password clears the account's count (not the address's: that one is shared). */
  async recordSuccess(accountKey: string): Promise<void> {
    await this.byAccount.delete(accountKey);
  }

  private async consume(limiter: RateLimiterRedis, key: string): Promise<void> {
    try {
      await limiter.consume(key);
    } catch (error) {
      // Over the limit is the expected outcome here; assertAllowed answers it next time.
      if (!(error instanceof RateLimiterRes)) throw error;
    }
  }
}
