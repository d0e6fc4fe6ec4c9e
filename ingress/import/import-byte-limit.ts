import path from 'node:path';

import type { Request, RequestHandler } from 'express';
import type { Result } from 'ioredis';
import { RateLimiterRedis, RateLimiterRes } from 'rate-limiter-flexible';

import { AppError } from '../../shared/errors';
import { bytesReadByBodyParser, declaresBody, limitDecodedBytes } from '../../shared/http/request-body';
import type { RedisClient } from '../../shared/redis/connections';
import type { Keys } from '../../shared/redis/keys';
import { defineScript, registerScripts, type ScriptDefinition } from '../../shared/redis/scripts';
import { authenticatedPrincipal } from '../auth/principal';

/** The window the bytes are counted in: IMPORT_BYTES_PER_ACCOUNT_PER_MINUTE is per minute. */
const WINDOW_SECONDS = 60;

/**
 * A chunked body's unused charge is given back only while this much of its window is left, so it
 * is given back to the window it was charged in (the script gives nothing to one that has ended).
 */
const REFUND_MARGIN_MS = 1_000;

/** The byte budget's own script (lua/): rate-limiter-flexible's reward could turn the counter negative. */
const IMPORT_BYTE_SCRIPTS: readonly ScriptDefinition[] = [
  defineScript({
    name: 'refundImportBytes',
    file: path.join(__dirname, 'lua', 'refund-import-bytes-1.lua'),
    numberOfKeys: 1,
  }),
];

declare module 'ioredis' {
  interface RedisCommander<Context> {
    /** The counter after giving back at most `bytes` (never below 0); -1 when its window ended. */
    refundImportBytes(counterKey: string, bytes: number): Result<number, Context>;
  }
}

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
 * What a request is charged before its body is read: its declared Content-Length when that is
 * what will be read (an uncompressed body); otherwise (chunked, or compressed: 123 bytes of br can
 * inflate to 16 MB) the route's body limit, the most it may read once decoded, until the body is
 * read and it is charged the decoded bytes it held (see {@link isChargedTheLimit}); a compressed
 * body is charged less when less is left (ImportByteLimit.reserve, ADR 0047). A body declared
 * larger than the limit is charged nothing: the body reader refuses it unread (413).
 */
export function chargedBytes(req: Request, bodyLimitBytes: number): number {
  if (isChargedTheLimit(req)) return bodyLimitBytes;
  const declared = req.headers['content-length'];
  if (declared === undefined) return 0;
  const length = /^[0-9]{1,15}$/.test(declared) ? Number(declared) : 0;
  return length > bodyLimitBytes ? 0 : length;
}

/**
 * A body whose decoded length is unknown before it is read: chunked, or in a Content-Encoding
 * other than identity (which an unknown or refused encoding is too: charged, then given back).
 */
function isChargedTheLimit(req: Request): boolean {
  if (isCompressed(req)) return true;
  return req.headers['content-length'] === undefined && req.headers['transfer-encoding'] !== undefined;
}

/**
 * Caps the bytes of import bodies one account sends per minute (IMPORT_BYTES_PER_ACCOUNT_PER_MINUTE,
 * 0 for no cap), counted in Redis so the cap holds across replicas. It runs after authentication
 * and before the body is read, so an account past its bytes gets its 429 without a byte parsed (the
 * rest of the body is dropped as the connection closes, see shared/http/lingering-close.ts), and is
 * refused from memory until the window ends. A chunked or compressed body, charged the body limit up front, is then
 * charged the bytes it held once decoded: the budget counts what the ingress inflates and parses.
 */
export class ImportByteLimit {
  private readonly limiter: RateLimiterRedis | undefined;

  constructor(
    private readonly redis: RedisClient,
    keys: Keys,
    private readonly bytesPerMinute: number,
  ) {
    if (bytesPerMinute === 0) return;
    registerScripts(redis, IMPORT_BYTE_SCRIPTS);
    this.limiter = new RateLimiterRedis({
      storeClient: redis,
      keyPrefix: keys.importBytesPrefix(),
      points: bytesPerMinute,
      duration: WINDOW_SECONDS,
      // Past the cap, not at it: a chunked body charged up to the cap may get most of it back.
      inMemoryBlockOnConsumed: bytesPerMinute + 1,
      rejectIfRedisNotReady: true,
    });
  }

  /**
   * Counts `bytes` of the account's imports; throws the 429 problem once they pass the cap.
   * Resolves to when the window they were counted in ends (ms since the epoch), null if uncounted.
   */
  async consume(userId: string, bytes: number): Promise<number | null> {
    const limiter = this.limiter;
    if (!limiter || bytes === 0) return null;
    // As the account rate limit: Redis away is the 503 problem, not a free pass.
    if (this.redis.status !== 'ready') throw new Error('Redis connection is not ready');
    try {
      const counted = await limiter.consume(userId, bytes);
      return Date.now() + counted.msBeforeNext;
    } catch (error) {
      if (!(error instanceof RateLimiterRes)) throw error;
      throw tooManyImportBytes(this.bytesPerMinute, Math.max(1, Math.ceil(error.msBeforeNext / 1000)));
    }
  }

  /**
   * Gives back `bytes` of the account's count in the window ending at `windowEndsAt`, unless that
   * window has ended (or is about to): never into the next one, never below zero.
   */
  async refund(userId: string, bytes: number, windowEndsAt: number): Promise<void> {
    const limiter = this.limiter;
    if (!limiter || bytes <= 0 || Date.now() > windowEndsAt - REFUND_MARGIN_MS) return;
    await this.redis.refundImportBytes(limiter.getKey(userId), bytes);
  }

  /**
   * The route's body step: charges the authenticated caller's request before `readBody` reads it
   * (see chargedBytes; a compressed body, what the account has left up to `bodyLimitBytes`, its
   * inflation ended by the 429 at the first byte past that); a chunked or compressed body gets back
   * what it did not hold once decoded when `readBody` is done with it, whether it took or refused it.
   */
  charge(bodyLimitBytes: number, readBody: RequestHandler): RequestHandler {
    return (req, res, next) => {
      const { userId } = authenticatedPrincipal(req);
      this.reserve(req, userId, bodyLimitBytes).then(({ charged, windowEndsAt }) => {
        if (windowEndsAt === null || !isChargedTheLimit(req)) {
          void readBody(req, res, next);
          return;
        }
        void readBody(req, res, (error?: unknown) => {
          // A refund Redis could not take leaves the account charged more, never less.
          this.refund(userId, charged - bytesReadByBodyParser(req), windowEndsAt)
            .catch(() => undefined)
            .finally(() => next(error));
        });
      }, next);
    };
  }

  /**
   * Charges the request before its body is read. A compressed body (which may inflate to anything
   * up to the limit) is charged what the account has left, up to the limit, and may inflate to
   * that much only: a small compressed import goes through while less than the limit is left, and
   * a large one is refused as its inflated bytes pass what is left, never before a byte is read.
   */
  private async reserve(
    req: Request,
    userId: string,
    bodyLimitBytes: number,
  ): Promise<{ charged: number; windowEndsAt: number | null }> {
    if (this.limiter === undefined || !isCompressed(req)) {
      const charged = chargedBytes(req, bodyLimitBytes);
      return { charged, windowEndsAt: await this.consume(userId, charged) };
    }
    const counted = await this.limiter.get(userId);
    const left = counted === null ? this.bytesPerMinute : counted.remainingPoints;
    if (left <= 0) {
      const retryAfter = Math.max(1, Math.ceil((counted?.msBeforeNext ?? 0) / 1000));
      throw tooManyImportBytes(this.bytesPerMinute, retryAfter);
    }
    const charged = Math.min(left, bodyLimitBytes);
    const windowEndsAt = await this.consume(userId, charged);
    if (charged < bodyLimitBytes && windowEndsAt !== null) {
      limitDecodedBytes(req, charged, () =>
        tooManyImportBytes(this.bytesPerMinute, Math.max(1, Math.ceil((windowEndsAt - Date.now()) / 1000))),
      );
    }
    return { charged, windowEndsAt };
  }
}

/** A body in a Content-Encoding other than identity: what it inflates to is known only once read. */
function isCompressed(req: Request): boolean {
  const encoding = req.headers['content-encoding'];
  return encoding !== undefined && encoding.trim().toLowerCase() !== 'identity' && declaresBody(req);
}
