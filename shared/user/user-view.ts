import type { ActiveUser } from './user.decider';

/**
 * An account as GetUser and ListUsers answer it: what an operator needs to manage it, and nothing
 * that proves or protects an identity (no password hash, no security stamp, no key). The members are
 * picked one by one, never spread from the state, so a field added to the state (a secret, say)
 * reaches no answer without a line here.
 */
export interface UserView {
  readonly id: string;
  readonly email: string;
  readonly userName: string;
  readonly userType: ActiveUser['userType'];
  /** Assigned roles (not expanded by the hierarchy). */
  readonly roles: ActiveUser['roles'];
  readonly firstName: string | null;
  readonly lastName: string | null;
  readonly emailVerified: boolean;
  readonly disabled: boolean;
  readonly createdAt: string;
  readonly updatedAt: string;
  /** The account's version (its stream's length): what `expectedVersion` names. */
  readonly version: number;
}

/** Every member of a UserView, in the order answers write them. */
export const USER_VIEW_MEMBERS = [
  'id',
  'email',
  'userName',
  'userType',
  'roles',
  'firstName',
  'lastName',
  'emailVerified',
  'disabled',
  'createdAt',
  'updatedAt',
  'version',
] as const satisfies readonly (keyof UserView)[];

/** The view of a live account at `version`: the one mapping both queries answer through. */
export function toUserView(user: ActiveUser, version: number): UserView {
  return {
    id: user.userId,
    email: user.email,
    userName: user.userName,
    userType: user.userType,
    roles: [...user.roles],
    firstName: user.firstName,
    lastName: user.lastName,
    emailVerified: user.emailVerified,
    disabled: user.disabled,
    createdAt: user.createdAt,
    updatedAt: user.updatedAt,
    version,
  };
}
