import Joi from 'joi';

import { guid, text } from '../validation';
import { assignedRolesSchema, newPasswordSchema, presentedPasswordSchema } from './account-schemas';
import type { AccountCommandType } from './user.commands';

/**
 * One entry per account command of POST /api/command: the schema of its `command` object. Each acts
 * on the user aggregate named by `aggregateRootId` (the user id; ChangePassword's is the caller's
 * own) and is run by account-commands.ts.
 */
export interface AccountCommandDefinition {
  readonly commandType: AccountCommandType;
  readonly description: string;
  readonly schema: Joi.ObjectSchema;
}

const aggregateRootId = guid().required();

export const ACCOUNT_COMMAND_DEFINITIONS: readonly AccountCommandDefinition[] = [
  {
    commandType: 'ChangePassword',
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
    description:
      "Sets another account's password (how a service account's password is rotated). Revokes the account's tokens.",
    schema: Joi.object({ aggregateRootId, newPassword: newPasswordSchema().required() }),
  },
  {
    commandType: 'SetUserRoles',
    description:
      "Replaces the account's roles, within the caller's grant rule for the roles taken away and given. Revokes the account's tokens.",
    schema: Joi.object({ aggregateRootId, roles: assignedRolesSchema().required() }),
  },
  {
    commandType: 'DisableUser',
    description: "Disables the account: it cannot sign in or use any token. Revokes the account's tokens.",
    schema: Joi.object({ aggregateRootId, reason: text({ max: 1000 }).allow(null, '').default(null) }),
  },
  {
    commandType: 'EnableUser',
    description: 'Lets a disabled account sign in again (tokens revoked by the disable stay revoked).',
    schema: Joi.object({ aggregateRootId }),
  },
  {
    commandType: 'DeleteUser',
    description:
      'Erases the account: its personal data is shredded, its teams pass to a tombstone id, and its e-mail may be registered again.',
    schema: Joi.object({ aggregateRootId }),
  },
];
