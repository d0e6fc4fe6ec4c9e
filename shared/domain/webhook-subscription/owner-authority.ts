import { hasAnyRole } from '../../roles';
import { activeUser, type UserState } from '../user/user.decider';
import type { OwnerLapse } from './webhook-subscription.messages';

/** What a subscription delivers under: its owner, and since when that account has owned it. */
export interface Ownership {
  readonly ownerUserId: string;
  /** ISO 8601. */
  readonly ownerSince: string;
}

/**
 * Whether a subscription's owner still holds the authority it delivers under, and if not, why: the
 * account must be live (not erased, and not an account registered again under the same id after it
 * took the subscription over: the same e-mail gives the same id), enabled, and hold Admin. A
 * password or security-stamp change is no lapse: ownership is the account's authority, not a
 * session's. Null when the owner qualifies.
 */
export function ownerLapse(ownership: Ownership, owner: UserState): OwnerLapse | null {
  const account = activeUser(owner);
  if (account === null || Date.parse(account.createdAt) > Date.parse(ownership.ownerSince)) return 'deleted';
  if (account.disabled) return 'disabled';
  if (!hasAnyRole(account.roles, ['Admin'])) return 'notAdmin';
  return null;
}
