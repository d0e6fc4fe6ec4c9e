import { hasAnyRole } from '../../shared/roles';
import { activeUser, type UserState } from '../../shared/user/user.decider';
import type { OwnerLapse } from '../../shared/webhook-subscription/webhook-subscription.messages';

/**
 * What a subscription delivers under: its owner, and since when that account has owned it. Since
 * the owner's account version when it took over (`ownerSinceVersion`): the owner's changes are
 * placed against it by that account stream's own versions, so no clock of two processes (the
 * ingress that wrote the take-over, whatever wrote the account's change) is compared (ADR 0038).
 */
export interface Ownership {
  readonly ownerUserId: string;
  /** ISO 8601: compared only when `ownerSinceVersion` is null (a take-over recorded before it was kept). */
  readonly ownerSince: string;
  readonly ownerSinceVersion: number | null;
}

/**
 * Whether a subscription's owner still holds the authority it delivers under, and if not, why: the
 * account must be live, enabled, and hold Admin. A password or security-stamp change is no lapse:
 * ownership is the account's authority, not a session's. Null when the owner qualifies.
 *
 * An account registered again under the same id after it took the subscription over (the same
 * e-mail gives the same id) is another account: with a version, that account's erasure sits in
 * its stream after the take-over and is a lapse seen (lapsesAmong); without one, its creation
 * time is compared with `ownerSince`, as before versions were recorded.
 */
export function ownerLapse(ownership: Ownership, owner: UserState): OwnerLapse | null {
  const account = activeUser(owner);
  if (account === null) return 'deleted';
  if (
    ownership.ownerSinceVersion === null &&
    Date.parse(account.createdAt) > Date.parse(ownership.ownerSince)
  ) {
    return 'deleted';
  }
  if (account.disabled) return 'disabled';
  if (!hasAnyRole(account.roles, ['Admin'])) return 'notAdmin';
  return null;
}

/** A lapse of an account seen in one of its states, and where the change that led to it sits. */
export interface LapseSeen {
  readonly lapse: OwnerLapse;
  /** The version of the account's stream its change made. */
  readonly version: number;
  /** ISO 8601: the change's time (its event's), for ownerships without a version only. */
  readonly at: string;
}

/**
 * The lapses among an account's states in turn (each with the version and time of its change), as
 * they would be for an ownership begun just before the change: an account disabled and enabled
 * again between two reads lapsed all the same.
 */
export function lapsesAmong(
  ownerUserId: string,
  states: readonly { readonly state: UserState; readonly version: number; readonly at: string }[],
): LapseSeen[] {
  return states.flatMap(({ state, version, at }) => {
    const lapse = ownerLapse({ ownerUserId, ownerSince: at, ownerSinceVersion: null }, state);
    return lapse === null ? [] : [{ lapse, version, at }];
  });
}

/** Whether a lapse seen came after the ownership began: by versions, or by time without one. */
export function lapsedAfter(ownership: Ownership, seen: LapseSeen): boolean {
  return ownership.ownerSinceVersion === null
    ? Date.parse(seen.at) >= Date.parse(ownership.ownerSince)
    : seen.version > ownership.ownerSinceVersion;
}

/** The first lapse seen since the ownership began; null when none was. */
export function lapseSince(ownership: Ownership, seen: readonly LapseSeen[]): OwnerLapse | null {
  return seen.find((entry) => lapsedAfter(ownership, entry))?.lapse ?? null;
}
