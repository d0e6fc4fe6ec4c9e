import type { Request, RequestHandler } from 'express';
import { RateLimiterRedis, RateLimiterRes } from 'rate-limiter-flexible';

import { AppError } from '../../shared/errors';
import type { RedisClient } from '../../shared/redis/connections';
import type { Keys } from '../../shared/redis/keys';
import { authenticatedPrincipal } from '../auth/principal';

/** The window the bytes are counted in: IMPORT_BYTES_PER_ACCOUNT_PER_MINUTE is per minute. */
const WINDOW_SECONDS = 60;

/** The 429 problem of an account past its import bytes for the minute. */
export function tooManyImportBytes(bytesPerMinute: number, retryAfterSeconds: number): AppError {
  return new AppError(
    'TOO_MANY_REQUESTS',
    `Too many import bytes for this account: at most ${bytesPerMinute} bytes of import bodies a minute. Try again later.`,
    429,
    { retryAfterSeconds },
  );
}

/**
 * What a request is charged before its body is read: its declared Content-Length; when it
 * declares none but sends a body (chunked), the route's body limit, the most it may read. A body
 * declared larger than the limit is charged nothing: the body reader refuses it unread (413).
 */
export function chargedBytes(req: Request, bodyLimitBytes: number): number {
  const declared = req.headers['content-length'];
  if (declared !== undefined) {
    const length = /^[0-9]{1,15}$/.test(declared) ? Number(declared) : 0;
    return length > bodyLimitBytes ? 0 : length;
  }
  return req.headers['transfer-encoding'] === undefined ? 0 : bodyLimitBytes;
}

/**
 * Caps the bytes of import bodies one account sends per minute (IMPORT_BYTES_PER_ACCOUNT_PER_MINUTE,
 * 0 for no cap), counted in Redis (one counter key per account and window, through
 * rate-limiter-flexible, as the account rate limit is) so the cap holds across every ingress
 * replica. It runs after authentication and before the body is read: an anonymous caller is refused
 * before it and costs nothing, and an account past its bytes gets the 429 problem with Retry-After
 * without a byte of its body read or parsed (the answer closes the connection, see
 * closeWhenBodyUnread). An account past the cap is refused from memory until the window ends.
 */
export class ImportByteLimit {
  private readonly limiter: RateLimiterRedis | undefined;

  constructor(
    private readonly redis: RedisClient,
    keys: Keys,
    private readonly bytesPerMinute: number,
  ) {
    if (bytesPerMinute === 0) return;
    this.limiter = new RateLimiterRedis({
      storeClient: redis,
      keyPrefix: keys.importBytesPrefix(),
      points: bytesPerMinute,
      duration: WINDOW_SECONDS,
      inMemoryBlockOnConsumed: bytesPerMinute,
      rejectIfRedisNotReady: true,
    });
  }

  /** Counts `bytes` of the account's imports; throws the 429 problem once they pass the cap. */
  async consume(userId: string, bytes: number): Promise<void> {
    const limiter = this.limiter;
    if (!limiter || bytes === 0) return;
    // As the account rate limit: Redis away is the 503 problem, not a free pass.
    if (this.redis.status !== 'ready') throw new Error('Redis connection is not ready');
    try {
      await limiter.consume(userId, bytes);
    } catch (error) {
      if (!(error instanceof RateLimiterRes)) throw error;
      throw tooManyImportBytes(this.bytesPerMinute, Math.max(1, Math.ceil(error.msBeforeNext / 1000)));
    }
  }

  /** The route step: charges the authenticated caller's request (see chargedBytes) before its body is read. */
  charge(bodyLimitBytes: number): RequestHandler {
    return (req, _res, next) => {
      this.consume(authenticatedPrincipal(req).userId, chargedBytes(req, bodyLimitBytes)).then(
        () => next(),
        next,
      );
    };
  }
}
