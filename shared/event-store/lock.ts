import { randomBytes } from 'node:crypto';
import type { Redis } from 'ioredis';

import { AggregateBusyError } from './errors';

export interface LockOptions {
  /** How long a lock lives if its holder dies without releasing it. */
  readonly ttlMs: number;
  /** How long to wait for a busy lock before giving up. */
  readonly waitMs: number;
}

/**
 * A lock per aggregate: SET NX PX with a random token, released only by its holder (compare and
 * delete in Lua). It serialises command handling so retries are rare; it is not what keeps the
 * stream correct. The version fence in the append script is, should a holder outlive its lock.
 */
export async function withLock<T>(
  redis: Redis,
  lockKey: string,
  aggregateId: string,
  options: LockOptions,
  work: () => Promise<T>,
): Promise<T> {
  const token = randomBytes(16).toString('base64url');
  const started = Date.now();
  let backoffMs = 5;
  while ((await redis.set(lockKey, token, 'PX', options.ttlMs, 'NX')) !== 'OK') {
    const waited = Date.now() - started;
    if (waited >= options.waitMs) throw new AggregateBusyError(aggregateId, waited);
    // Full jitter, so waiters on a hot aggregate do not retry in lockstep.
    const delay = Math.min(Math.random() * backoffMs, options.waitMs - waited);
    await new Promise((resolve) => setTimeout(resolve, delay));
    backoffMs = Math.min(backoffMs * 2, 100);
  }
  try {
    return await work();
  } finally {
    await redis.releaseLock(lockKey, token).catch(() => undefined);
  }
}
