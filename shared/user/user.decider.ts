import {
  accept,
  type Decider,
  type Decision,
  type DecisionContext,
  forbid,
  reject,
} from '../event-store/decider';
import { firstUngrantableRole, grantableRoles, grantRefusal } from '../roles';
import type { AccountCommandType, UserCommand } from './user.commands';
import type { UserCreatedEvent, UserEvent } from './user.events';
import { USER_MESSAGES, type UserVerb } from './user.messages';

/**
 * The stamp of an account created before accounts had one. Tokens issued then carry no stamp
 * claim, which reads as this value: they stay valid until the account's first security change.
 */
export const LEGACY_SECURITY_STAMP = '';

/** A live account as folded from its events. */
export interface ActiveUser {
  readonly userId: string;
  readonly email: string;
  readonly userName: string;
  readonly userType: UserCreatedEvent['data']['userType'];
  readonly roles: UserCreatedEvent['data']['roles'];
  readonly firstName: string | null;
  readonly lastName: string | null;
  readonly emailVerified: boolean;
  readonly createdAt: string;
  readonly updatedAt: string;
  readonly disabled: boolean;
  readonly disabledReason: string | null;
  /** Changes on every security-relevant change; credentials issued under another are dead. */
  readonly securityStamp: string;
}

/** What is left of an erased account: no personal data, and the id its teams passed to. */
export interface DeletedUser {
  readonly deleted: true;
  readonly userId: string;
  readonly tombstoneId: string;
  readonly deletedAt: string;
}

/** null before the account is created. A deleted account counts as non-existent to every command. */
export type UserState = ActiveUser | DeletedUser | null;

export function isDeletedUser(state: UserState): state is DeletedUser {
  return state !== null && 'deleted' in state;
}

/** The live account of a state; null when there is none (never created, or deleted). */
export function activeUser(state: UserState): ActiveUser | null {
  return state === null || isDeletedUser(state) ? null : state;
}

const VERBS: Readonly<Record<AccountCommandType, UserVerb>> = {
  ChangePassword: 'change the password of',
  SetUserPassword: 'set the password of',
  SetUserRoles: 'set the roles of',
  DisableUser: 'disable',
  EnableUser: 'enable',
  DeleteUser: 'delete',
};

/**
 * The grant rule applied to an account already there: a manager acts only on accounts whose every
 * role it could grant (a UserManager touches no Admin, UserManager or ServiceAccount).
 */
function beyondReach(target: ActiveUser, context: DecisionContext): Decision<UserEvent> | undefined {
  const role = firstUngrantableRole(context.actorRoles, target.roles);
  if (role === undefined) return undefined;
  const actor = { email: context.actorEmail ?? context.actorUserId, userId: context.actorUserId };
  return forbid(USER_MESSAGES.mayNotManage(actor, target.userId, role, grantableRoles(context.actorRoles)));
}

function decideOnAccount(
  command: Exclude<UserCommand, { type: 'CreateUser' }>,
  target: ActiveUser,
  context: DecisionContext,
): Decision<UserEvent> {
  const at = context.now.toISOString();
  const byUserId = context.actorUserId;
  const self = target.userId === context.actorUserId;
  switch (command.type) {
    case 'ChangePassword':
      if (!self) return reject(USER_MESSAGES.notYourAccount);
      return accept({ type: 'UserPasswordChangedEvent', data: { at, byUserId, ...command.data } });
    case 'SetUserPassword':
      if (self) return reject(USER_MESSAGES.ownPasswordBySet);
      return (
        beyondReach(target, context) ??
        accept({ type: 'UserPasswordChangedEvent', data: { at, byUserId, ...command.data } })
      );
    case 'SetUserRoles': {
      const refusal = beyondReach(target, context);
      if (refusal) return refusal;
      const actor = {
        email: context.actorEmail ?? context.actorUserId,
        userId: context.actorUserId,
        roles: context.actorRoles,
      };
      const grantRefused = grantRefusal(actor, command.data.roles);
      if (grantRefused !== undefined) return forbid(grantRefused);
      const roles = [...new Set(command.data.roles)];
      return accept({ type: 'UserRolesSetEvent', data: { at, byUserId, ...command.data, roles } });
    }
    case 'DisableUser':
      if (self) return reject(USER_MESSAGES.cannotDisableSelf);
      if (target.disabled) return reject(USER_MESSAGES.alreadyDisabled);
      return (
        beyondReach(target, context) ??
        accept({ type: 'UserDisabledEvent', data: { at, byUserId, ...command.data } })
      );
    case 'EnableUser':
      if (!target.disabled) return reject(USER_MESSAGES.notDisabled);
      return beyondReach(target, context) ?? accept({ type: 'UserEnabledEvent', data: { at, byUserId } });
    case 'DeleteUser':
      if (self) return reject(USER_MESSAGES.cannotDeleteSelf);
      return (
        beyondReach(target, context) ??
        accept({ type: 'UserDeletedEvent', data: { at, byUserId, ...command.data } })
      );
    default: {
      const _exhaustive: never = command;
      return _exhaustive;
    }
  }
}

export const userDecider: Decider<UserState, UserCommand, UserEvent> = {
  aggregateType: 'user',
  initialState: null,
  // 2: disabled, updatedAt and the security stamp joined the state; a deleted account is a tombstone.
  stateVersion: 2,

  decide(command, state, context) {
    if (command.type === 'CreateUser') {
      // A deleted account's e-mail may be registered again: the same id, a new account (ADR 0014).
      if (activeUser(state)) return reject(USER_MESSAGES.alreadyExists);
      return accept({
        type: 'UserCreatedEvent',
        data: { ...command.data, createdAt: context.now.toISOString() },
      });
    }
    const target = activeUser(state);
    if (!target) return reject(USER_MESSAGES.nonExistent(VERBS[command.type]));
    return decideOnAccount(command, target, context);
  },

  evolve(state, event) {
    if (event.type === 'UserCreatedEvent') {
      const { securityStamp, ...data } = event.data;
      return {
        ...data,
        updatedAt: data.createdAt,
        disabled: false,
        disabledReason: null,
        securityStamp: securityStamp ?? LEGACY_SECURITY_STAMP,
      };
    }
    const account = activeUser(state);
    if (!account) return state;
    switch (event.type) {
      case 'UserPasswordChangedEvent':
        return { ...account, updatedAt: event.data.at, securityStamp: event.data.securityStamp };
      case 'UserRolesSetEvent':
        return {
          ...account,
          roles: event.data.roles,
          updatedAt: event.data.at,
          securityStamp: event.data.securityStamp,
        };
      case 'UserDisabledEvent':
        return {
          ...account,
          disabled: true,
          disabledReason: event.data.reason,
          updatedAt: event.data.at,
          securityStamp: event.data.securityStamp,
        };
      case 'UserEnabledEvent':
        return { ...account, disabled: false, disabledReason: null, updatedAt: event.data.at };
      case 'UserDeletedEvent':
        return {
          deleted: true,
          userId: account.userId,
          tombstoneId: event.data.tombstoneId,
          deletedAt: event.data.at,
        };
      default: {
        const _exhaustive: never = event;
        return state;
      }
    }
  },
};
