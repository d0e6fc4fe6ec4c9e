import type { Account } from '../../shared/accounts/account';
import { hasAnyRole, type Role } from '../../shared/roles';

/** Who may read every event of the service. */
export const EVENT_STREAM_ROLES: readonly Role[] = ['Admin', 'ServiceAccount'];

/**
 * Whether a stream admitted for an account under `admittedStamp` may go on: the account still
 * exists, is enabled, holds a role that may read the stream, and its security stamp has not
 * changed since (a password change, a disable, a role change: what revokes its credentials
 * revokes its open streams too).
 */
export function streamStillAllowed(account: Account | null, admittedStamp: string): boolean {
  return (
    account !== null &&
    !account.disabled &&
    account.securityStamp === admittedStamp &&
    hasAnyRole(account.roles, EVENT_STREAM_ROLES)
  );
}
