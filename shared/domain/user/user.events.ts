import type { AssignableRole } from '../../roles';
import type { DomainEvent } from '../decider';
import type { UserType } from './user.commands';

/** Never carries a password or a hash: those live only in the account's credential field. */
export type UserCreatedEvent = DomainEvent<
  'UserCreatedEvent',
  {
    readonly userId: string;
    readonly email: string;
    readonly userName: string;
    readonly userType: UserType;
    readonly roles: readonly AssignableRole[];
    readonly firstName: string | null;
    readonly lastName: string | null;
    readonly emailVerified: boolean;
    readonly createdAt: string;
  }
>;

export type UserEvent = UserCreatedEvent;
