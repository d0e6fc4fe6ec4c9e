import { randomBytes } from 'node:crypto';

import { AggregateBusyError } from './errors';

export interface LockOptions {
  /** How long a lock lives if its holder dies without releasing it. */
  readonly ttlMs: number;
  /** How long to wait for a busy lock before giving up. */
  readonly waitMs: number;
}

/** A random token that names one holder of one lock. */
export function lockToken(): string {
  return randomBytes(16).toString('base64url');
}

/**
 * Calls `attempt` (which takes the lock, returning null while someone else holds it) until it
 * succeeds or `waitMs` has passed, with full-jitter backoff so waiters on a hot aggregate do not
 * retry in lockstep. The lock serialises command handling so retries are rare; it is not what
 * keeps the stream correct. The version fence in the append script is, should a holder outlive it.
 */
export async function waitForLock<T>(
  aggregateId: string,
  options: LockOptions,
  attempt: () => Promise<T | null>,
): Promise<T> {
  const started = Date.now();
  let backoffMs = 5;
  for (;;) {
    const taken = await attempt();
    if (taken !== null) return taken;
    const waited = Date.now() - started;
    if (waited >= options.waitMs) throw new AggregateBusyError(aggregateId, waited);
    const delay = Math.min(Math.random() * backoffMs, options.waitMs - waited);
    await new Promise((resolve) => setTimeout(resolve, delay));
    backoffMs = Math.min(backoffMs * 2, 100);
  }
}
