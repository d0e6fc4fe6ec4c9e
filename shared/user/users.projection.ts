import type { Projection } from '../projections/projection';
import { type ActiveUser, activeUser, LEGACY_SECURITY_STAMP, userDecider } from './user.decider';
import type { UserEvent } from './user.events';
import { toUserView, type UserView } from './user-view';
import { indexMember, listingIndexKeysOf } from './users-index';

const NAME = 'users';

/**
 * The account state inside a view, for the decider's evolve. The view keeps no security stamp
 * and no reason for a disable; evolve only carries them along, so placeholders do, and the view
 * drops them again.
 */
function stateOf(view: UserView): ActiveUser {
  return {
    userId: view.id,
    email: view.email,
    userName: view.userName,
    userType: view.userType,
    roles: view.roles,
    firstName: view.firstName,
    lastName: view.lastName,
    emailVerified: view.emailVerified,
    createdAt: view.createdAt,
    updatedAt: view.updatedAt,
    disabled: view.disabled,
    disabledReason: null,
    securityStamp: LEGACY_SECURITY_STAMP,
  };
}

/**
 * The account table behind ListUsers: one document per live account (its ListUsers item, ready to
 * send) and the e-mail indexes of users-index.ts, in the account's partition (ADR 0032), so one
 * batch script of a log partition updates documents, indexes and checkpoint in one slot. A deleted account leaves no document or index entry. Evolves
 * through the aggregate's own evolve, so the table never disagrees with the write side; events
 * written before accounts had a security stamp fold the same.
 */
export const usersProjection: Projection<UserView> = {
  name: NAME,
  aggregateType: userDecider.aggregateType,
  checkpointKey: (keys, partition) => keys.users.checkpoint(partition),
  documentKey: (keys, userId) => keys.users.user(userId),
  documentsIn: (keys, partition) => keys.users.usersIn(partition),
  // The layout before ADR 0032 is deleted with it: a rebuild is the upgrade.
  keyPatterns: (keys) => [...keys.users.patterns(), ...keys.users.legacyPatterns()],

  evolve(doc, event) {
    if (doc && event.version <= doc.version) return doc; // already applied
    const after = userDecider.evolve(doc && stateOf(doc), {
      type: event.eventType,
      data: event.data,
    } as UserEvent);
    const account = activeUser(after);
    return account && toUserView(account, event.version);
  },

  indexEntries(user, keys) {
    const member = indexMember(user);
    return listingIndexKeysOf(keys, user).map((key) => ({ kind: 'zset', key, member, score: 0 }));
  },
};
