import { hasAnyRole } from '../../shared/roles';
import { activeUser, type UserState } from '../../shared/user/user.decider';
import type { OwnerLapse } from '../../shared/webhook-subscription/webhook-subscription.messages';

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

/** A lapse of an account seen in one of its states, and when the change that led to it happened. */
export interface LapseSeen {
  readonly lapse: OwnerLapse;
  /** ISO 8601: the change's time (its event's). */
  readonly at: string;
}

/**
 * The lapses among an account's states in turn (each with when its change happened), as they
 * would be for an ownership begun just before the change: an account disabled and enabled again
 * between two reads lapsed all the same.
 */
export function lapsesAmong(
  ownerUserId: string,
  states: readonly { readonly state: UserState; readonly at: string }[],
): LapseSeen[] {
  return states.flatMap(({ state, at }) => {
    const lapse = ownerLapse({ ownerUserId, ownerSince: at }, state);
    return lapse === null ? [] : [{ lapse, at }];
  });
}

/** The first lapse seen since the ownership began; null when none was. */
export function lapseSince(ownership: Ownership, seen: readonly LapseSeen[]): OwnerLapse | null {
  const since = Date.parse(ownership.ownerSince);
  return seen.find((entry) => Date.parse(entry.at) >= since)?.lapse ?? null;
}
