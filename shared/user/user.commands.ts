import Joi from 'joi';

import type { AssignableRole, Role } from '../roles';
import { guid, text } from '../validation';
import { assignedRolesSchema, newPasswordSchema, presentedPasswordSchema } from './account-schemas';

export type UserType = 'Human' | 'ServiceAccount';
export const USER_TYPES: readonly UserType[] = ['Human', 'ServiceAccount'];

/**
 * Every command that changes what an account may do carries the account's next security stamp: a
 * random value the use case makes (the decider stays pure). Tokens carry the stamp they were issued
 * under, so rotating it revokes them (ASP.NET Identity's model; ADR 0014).
 */
interface Restamped {
  readonly securityStamp: string;
}

export interface CreateUser {
  readonly type: 'CreateUser';
  readonly data: Restamped & {
    readonly userId: string;
    readonly email: string;
    readonly userName: string;
    readonly userType: UserType;
    readonly roles: readonly AssignableRole[];
    readonly firstName: string | null;
    readonly lastName: string | null;
    readonly emailVerified: boolean;
  };
}

/** The account's own password, changed by the account; the use case has checked the current one. */
export interface ChangePassword {
  readonly type: 'ChangePassword';
  readonly data: Restamped;
}

/** Another account's password, set by a UserManager or an Admin (how a service account is rotated). */
export interface SetUserPassword {
  readonly type: 'SetUserPassword';
  readonly data: Restamped;
}

export interface SetUserRoles {
  readonly type: 'SetUserRoles';
  readonly data: Restamped & { readonly roles: readonly AssignableRole[] };
}

export interface DisableUser {
  readonly type: 'DisableUser';
  readonly data: Restamped & { readonly reason: string | null };
}

/** Lets a disabled account sign in again; its stamp stays, so tokens revoked by the disable stay dead. */
export interface EnableUser {
  readonly type: 'EnableUser';
  readonly data: Record<string, never>;
}

/**
 * Erasure: the account's personal data is shredded (its key is dropped with this event) and its
 * teams pass to `tombstoneId`, an id that names no account (ADR 0014).
 */
export interface DeleteUser {
  readonly type: 'DeleteUser';
  readonly data: { readonly tombstoneId: string };
}

export type UserCommand =
  CreateUser | ChangePassword | SetUserPassword | SetUserRoles | DisableUser | EnableUser | DeleteUser;

/** The account commands of POST /api/command (CreateUser comes through UserSeeding and bootstrap). */
export type AccountCommandType = Exclude<UserCommand['type'], 'CreateUser'>;

/**
 * Who may run each user command (the hierarchy applies: Admin includes UserManager). An empty list
 * is any authenticated account: ChangePassword acts on the caller's own account only.
 */
export const USER_COMMAND_ROLES: Readonly<Record<UserCommand['type'], readonly Role[]>> = {
  CreateUser: ['UserManager', 'Admin'],
  ChangePassword: [],
  SetUserPassword: ['UserManager', 'Admin'],
  SetUserRoles: ['UserManager', 'Admin'],
  DisableUser: ['UserManager', 'Admin'],
  EnableUser: ['UserManager', 'Admin'],
  DeleteUser: ['Admin'],
};

/**
 * One entry per account command of POST /api/command: the schema of its `command` object. Each acts
 * on the user aggregate named by `aggregateRootId` (the user id; ChangePassword's is the caller's
 * own) and is run by account-commands.ts.
 */
export interface AccountCommandDefinition {
  readonly commandType: AccountCommandType;
  readonly description: string;
  /** Who may send it (none: any authenticated account); the aggregate's rules decide the rest. */
  readonly roles: readonly Role[];
  readonly schema: Joi.ObjectSchema;
}

const aggregateRootId = guid().required();

export const ACCOUNT_COMMAND_DEFINITIONS: readonly AccountCommandDefinition[] = [
  {
    commandType: 'ChangePassword',
    roles: USER_COMMAND_ROLES.ChangePassword,
    description:
      "Changes the caller's own password. A wrong currentPassword counts as a failed sign-in. Revokes the account's tokens.",
    schema: Joi.object({
      aggregateRootId: guid().description("Optional; when given it must be the caller's own user id."),
      currentPassword: presentedPasswordSchema().required(),
      newPassword: newPasswordSchema().required(),
    }),
  },
  {
    commandType: 'SetUserPassword',
    roles: USER_COMMAND_ROLES.SetUserPassword,
    description:
      "Sets another account's password (how a service account's password is rotated). Revokes the account's tokens.",
    schema: Joi.object({ aggregateRootId, newPassword: newPasswordSchema().required() }),
  },
  {
    commandType: 'SetUserRoles',
    roles: USER_COMMAND_ROLES.SetUserRoles,
    description:
      "Replaces the account's roles, within the caller's grant rule for the roles taken away and given. Revokes the account's tokens.",
    schema: Joi.object({ aggregateRootId, roles: assignedRolesSchema().required() }),
  },
  {
    commandType: 'DisableUser',
    roles: USER_COMMAND_ROLES.DisableUser,
    description: "Disables the account: it cannot sign in or use any token. Revokes the account's tokens.",
    schema: Joi.object({ aggregateRootId, reason: text({ max: 1000 }).allow(null, '').default(null) }),
  },
  {
    commandType: 'EnableUser',
    roles: USER_COMMAND_ROLES.EnableUser,
    description: 'Lets a disabled account sign in again (tokens revoked by the disable stay revoked).',
    schema: Joi.object({ aggregateRootId }),
  },
  {
    commandType: 'DeleteUser',
    roles: USER_COMMAND_ROLES.DeleteUser,
    description:
      'Erases the account: its personal data is shredded, its teams pass to a tombstone id, and its e-mail may be registered again.',
    schema: Joi.object({ aggregateRootId }),
  },
];
