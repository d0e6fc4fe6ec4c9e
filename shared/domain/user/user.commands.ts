import type { AssignableRole, Role } from '../../roles';

export type UserType = 'Human' | 'ServiceAccount';
export const USER_TYPES: readonly UserType[] = ['Human', 'ServiceAccount'];

export interface CreateUser {
  readonly type: 'CreateUser';
  readonly data: {
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

export type UserCommand = CreateUser;

/** Who may run each user command (the hierarchy applies: Admin includes UserManager). */
export const USER_COMMAND_ROLES: Readonly<Record<UserCommand['type'], readonly Role[]>> = {
  CreateUser: ['UserManager', 'Admin'],
};
