import { accountMention } from '../roles';

/** What each account command does to an account, as its refusals say it. */
export type UserVerb =
  'change the password of' | 'set the password of' | 'set the roles of' | 'disable' | 'enable' | 'delete';

/** Rejection texts of the user aggregate: clients match on them, so each is written once. */
export const USER_MESSAGES = {
  alreadyExists: 'User already exists',
  nonExistent: (verb: UserVerb) => `Cannot ${verb} non-existent user`,
  wrongCurrentPassword: 'The current password is not correct',
  notYourAccount: "ChangePassword changes the caller's own password; use SetUserPassword for another account",
  ownPasswordBySet: 'Use ChangePassword to change your own password',
  cannotDisableSelf: 'An account cannot disable itself',
  cannotDeleteSelf: 'An account cannot delete itself',
  alreadyDisabled: 'User is already disabled',
  notDisabled: 'User is not disabled',
  lastAdminRoles: 'The last enabled Admin cannot lose the role Admin',
  lastAdminDisable: 'The last enabled Admin cannot be disabled',
  lastAdminDelete: 'The last enabled Admin cannot be deleted',
  /**
   * A manager acting on an account with a role beyond its reach (the grant rule): a UserManager
   * touches no Admin, UserManager or ServiceAccount.
   */
  mayNotManage: (
    actor: { readonly email: string; readonly userId: string },
    targetUserId: string,
    role: string,
    grantable: readonly string[],
  ) =>
    `${accountMention(actor)} may not manage user ${targetUserId}, who holds role ${role}. ` +
    `Grantable roles: [${grantable.join(', ')}].`,
} as const;
