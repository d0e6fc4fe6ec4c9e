import { RateLimiterRedis, RateLimiterRes } from 'rate-limiter-flexible';

import type { Config } from '../../shared/config';
import { AppError } from '../../shared/errors';
import type { Logger } from '../../shared/logger';
import type { SignInMetrics } from '../../shared/metrics/metrics';
import type { RedisClient } from '../../shared/redis/connections';
import type { Keys } from '../../shared/redis/keys';
import { clientAddressKey } from './client-address';

/** One sign-in attempt that holds a point of both allowances while its password is checked. */
export interface SignInAttempt {
  /** The password was right: this attempt's points go back; earlier failures stay counted. */
  succeeded(): Promise<void>;
  /** The password was wrong: the points stay taken, and the account's failure count grows. */
  failed(): Promise<void>;
  /** Nothing was checked (Redis failed on the way): both points go back. */
  abandoned(): Promise<void>;
}

/**
 * Counts failed sign-ins in Redis (shared by every replica) per (account, address) pair and per
 * address, an IPv6 address by its /64 ({@link clientAddressKey}), and answers 429 to a pair or an
 * address over its limit. Nothing is refused per account alone, or anyone could lock any account out.
 * An attempt takes its points (one atomic INCR) before the password is checked and keeps them if it
 * is wrong, so parallel guesses cannot all pass before one is counted; a right password gives back
 * only its own points, so it hands a guesser on the same address no fresh allowance (ADR 0005).
 */
export class SignInThrottle {
  private readonly byPair: RateLimiterRedis;
  private readonly byAddress: RateLimiterRedis;
  /** Failures per account from every address: counted for the warning, never refusing. */
  private readonly byAccount: RateLimiterRedis;
  private readonly warningFailures: number;

  constructor(
    redis: RedisClient,
    keys: Keys,
    private readonly settings: Config['auth'],
    private readonly logger?: Logger,
    private readonly metrics?: SignInMetrics,
  ) {
    const common = {
      storeClient: redis,
      duration: settings.failureWindowSeconds,
      rejectIfRedisNotReady: true,
    };
    this.byPair = new RateLimiterRedis({
      ...common,
      keyPrefix: `${keys.authFailuresPrefix()}:pair`,
      points: settings.maxFailuresPerAccountAndAddress,
    });
    this.byAddress = new RateLimiterRedis({
      ...common,
      keyPrefix: `${keys.authFailuresPrefix()}:address`,
      points: settings.maxFailuresPerAddress,
    });
    this.warningFailures = settings.accountWarningFailures;
    this.byAccount = new RateLimiterRedis({
      ...common,
      keyPrefix: `${keys.authFailuresPrefix()}:account`,
      points: this.warningFailures,
    });
  }

  /**
   * Takes one point from the pair's and the address's allowance; throws the 429 (giving both
   * back, as nothing is checked) when either is used up.
   */
  async begin(accountKey: string, clientAddress: string): Promise<SignInAttempt> {
    const address = clientAddressKey(clientAddress);
    const points = [
      { limiter: this.byPair, key: `${accountKey}:${address}` },
      { limiter: this.byAddress, key: address },
    ] as const;
    const outcomes = await Promise.all(points.map(({ limiter, key }) => take(limiter, key)));
    const giveBack = async () => {
      await Promise.all(
        points
          // Over the limit still counted the point (rate-limiter-flexible adds, then compares).
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
      succeeded: giveBack,
      failed: () => this.countAccountFailure(accountKey),
      abandoned: giveBack,
    };
  }

  /**
   * One more failure of the account from any address. Reaching the warning threshold logs the
   * account's user id once per window (the count is one atomic INCR, so exactly one replica sees
   * it reached). Blocks nothing; a Redis failure here loses only the signal.
   */
  private async countAccountFailure(accountKey: string): Promise<void> {
    try {
      const counted = await this.byAccount.penalty(accountKey, 1);
      if (counted.consumedPoints !== this.warningFailures) return;
      this.metrics?.recordAccountUnderAttack();
      this.logger?.warn('sign-in failures for one account passed the warning threshold', {
        userId: accountKey,
        failures: counted.consumedPoints,
        windowSeconds: this.settings.failureWindowSeconds,
      });
    } catch (error) {
      this.logger?.debug('account sign-in failure not counted', {
        error: error instanceof Error ? error.message : String(error),
      });
    }
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
