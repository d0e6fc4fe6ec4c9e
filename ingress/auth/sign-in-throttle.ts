import type { RedisClient } from '../../shared/redis/connections';
import { RateLimiterRedis, RateLimiterRes } from 'rate-limiter-flexible';

import type { Config } from '../../shared/config';
import { AppError } from '../../shared/errors';
import type { Keys } from '../../shared/redis/keys';

/** One sign-in attempt that holds a point of both allowances while its password is checked. */
export interface SignInAttempt {
  /** The password was right: the account's count starts again and the address gets its point back. */
  succeeded(): Promise<void>;
  /** Nothing was checked (Redis failed on the way): both points go back. */
  abandoned(): Promise<void>;
}

/**
 * Counts failed sign-ins per account and per client address in Redis (so every replica sees the
 * same counts) and refuses further attempts with a 429 once either is over its limit.
 *
 * An attempt takes its point BEFORE the password is checked and keeps it if the password is wrong.
 * Checking the count first and adding to it after the check (a ~30 ms hash later) let parallel
 * guesses all pass the check before any was counted: 40 at once against a limit of 5 were all
 * verified. Taking the point first is one atomic INCR, so at most `limit` guesses are ever checked.
 */
export class SignInThrottle {
  private readonly byAccount: RateLimiterRedis;
  private readonly byAddress: RateLimiterRedis;

  constructor(redis: RedisClient, keys: Keys, settings: Config['auth']) {
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

  /**
   * Takes one point from the account's and the address's allowance; throws the 429 (giving both
   * back, as nothing is checked) when either is used up.
   */
  async begin(accountKey: string, address: string): Promise<SignInAttempt> {
    const points = [
      { limiter: this.byAccount, key: accountKey },
      { limiter: this.byAddress, key: address },
    ] as const;
    const outcomes = await Promise.all(points.map(({ limiter, key }) => take(limiter, key)));
    // Over the limit still counted the point (rate-limiter-flexible adds, then compares).
    const giveBack = async () => {
      await Promise.all(
        points
          .filter((_, i) => outcomes[i]?.kind !== 'failed')
          .map(({ limiter, key }) => limiter.reward(key)),
      );
    };

    for (const outcome of outcomes) {
      if (outcome.kind !== 'failed') continue;
      // Redis refused: give back what was taken and let the caller see why (a 503 when it is away).
      await giveBack().catch(() => undefined);
      throw outcome.error;
    }
    const waits = outcomes.flatMap((outcome) => (outcome.kind === 'over' ? [outcome.msBeforeNext] : []));
    if (waits.length) {
      await giveBack();
      throw new AppError('TOO_MANY_REQUESTS', 'Too many failed sign-in attempts. Try again later.', 429, {
        retryAfterSeconds: Math.max(1, Math.ceil(Math.max(...waits) / 1000)),
      });
    }
    return {
      // A correct password clears the account's count, not the address's (that one is shared).
      succeeded: async () => {
        await Promise.all([this.byAccount.delete(accountKey), this.byAddress.reward(address)]);
      },
      abandoned: giveBack,
    };
  }
}

type Taken =
  | { readonly kind: 'taken' }
  | { readonly kind: 'over'; readonly msBeforeNext: number }
  | { readonly kind: 'failed'; readonly error: unknown };

async function take(limiter: RateLimiterRedis, key: string): Promise<Taken> {
  try {
    await limiter.consume(key);
    return { kind: 'taken' };
  } catch (error) {
    if (error instanceof RateLimiterRes) return { kind: 'over', msBeforeNext: error.msBeforeNext };
    return { kind: 'failed', error };
  }
}
