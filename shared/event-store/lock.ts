import { randomUUID } from 'node:crypto';

import { AggregateBusyError } from './errors';

export interface LockOptions {
  /** How long a lock lives if its holder dies without releasing it. */
  readonly ttlMs: number;
  /** How long to wait for a busy lock before giving up. */
  readonly waitMs: number;
}

/**
 * A random token that names one holder of one lock: 122 random bits. randomUUID draws them from
 * node's cached entropy, so a command does not ask the kernel for them (ADR 0022).
 */
export function lockToken(): string {
  return randomUUID();
}

/** Told how long a wait lasted (in ms, the taking round trip included) and whether it got the lock. */
export type LockWaitObserver = (waitedMs: number, acquired: boolean) => void;

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
  observe?: LockWaitObserver,
): Promise<T> {
  // performance.now(): an uncontended wait is one round trip, well under Date.now()'s millisecond.
  const started = performance.now();
  let backoffMs = 5;
  for (;;) {
    const taken = await attempt();
    const waited = performance.now() - started;
    if (taken !== null) {
      observe?.(waited, true);
      return taken;
    }
    if (waited >= options.waitMs) {
      observe?.(waited, false);
      throw new AggregateBusyError(aggregateId, Math.round(waited));
    }
    const delay = Math.min(Math.random() * backoffMs, options.waitMs - waited);
    await new Promise((resolve) => setTimeout(resolve, delay));
    backoffMs = Math.min(backoffMs * 2, 100);
  }
}
