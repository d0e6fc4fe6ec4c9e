import type { Account } from '../accounts/account';
import { hasAnyRole, type Role } from '../roles';
import type { SubmitterCheck } from './importer';

/**
 * How stale a running import's view of its submitter may get: it re-reads the account (one HMGET)
 * when a row starts and the last read is older than this. At most ten reads a second per running
 * import, however fast its rows go; with a row in flight at most, a revoked submitter's import
 * starts no row later than this after the change reached Redis.
 */
export const SUBMITTER_RECHECK_MS = 100;

/** What an import is tied to: its submitter as it stood when it submitted. */
export interface SubmitterTie {
  readonly userId: string;
  /** Absent on jobs queued before imports were tied to it: then only enabled and role count. */
  readonly securityStamp?: string | undefined;
  /** Its record's creation: an account created after it (an erased e-mail registered again) is another. */
  readonly submittedAt?: string | undefined;
  /** The importer's roles: the submitter must keep at least one of them. */
  readonly requiredRoles: readonly Role[];
}

/**
 * Why the account no longer stands behind the import, as the end of the sentence
 * `Import stopped after N of M rows: <reason>`; null while it does. Ordered from the plainest
 * cause: gone, disabled, lost the role, then any other security change (its stamp moved).
 */
export function submitterRevocation(account: Account | null, tie: SubmitterTie): string | null {
  const submitter = `the submitter ${tie.userId}`;
  if (!account || (tie.submittedAt !== undefined && account.createdAt > tie.submittedAt)) {
    return `${submitter} was deleted`;
  }
  if (account.disabled) return `${submitter} was disabled`;
  if (!hasAnyRole(account.roles, tie.requiredRoles)) {
    return (
      `${submitter} no longer holds a required role. ` +
      `Required roles: [${tie.requiredRoles.join(', ')}]. User roles: [${account.roles.join(', ')}].`
    );
  }
  if (tie.securityStamp !== undefined && account.securityStamp !== tie.securityStamp) {
    return `the security stamp of ${submitter} changed (its password or roles were changed)`;
  }
  return null;
}

/**
 * A running import's re-check of its submitter, made between rows: `mayContinue()` re-reads the
 * account when the last read is older than `everyMs` (the rows running at once share one read), and
 * answers false from the first read that finds it revoked on. A failed read rejects, as a failed
 * command does: the attempt fails and BullMQ retries it.
 */
export function submitterCheck(
  read: () => Promise<Account | null>,
  tie: SubmitterTie,
  everyMs = SUBMITTER_RECHECK_MS,
): SubmitterCheck {
  let stopReason: string | null = null;
  // The first row reads afresh: the read the run started with came before its data was validated.
  let readAt = Number.NEGATIVE_INFINITY;
  let reading: Promise<void> | undefined;
  const reread = async () => {
    try {
      const account = await read();
      readAt = Date.now();
      stopReason ??= submitterRevocation(account, tie);
    } finally {
      reading = undefined;
    }
  };
  return {
    get stopReason() {
      return stopReason;
    },
    async mayContinue() {
      if (stopReason === null && (reading || Date.now() - readAt >= everyMs)) {
        reading ??= reread();
        await reading;
      }
      return stopReason === null;
    },
  };
}
