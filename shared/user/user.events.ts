import type { DomainEvent } from '../event-store/decider';
import type { CreateUser, DeleteUser, DisableUser, SetUserRoles } from './user.commands';

/** When an account event happened (the decision's `now`): the account's `updatedAt`. */
interface Dated {
  readonly at: string;
}

/**
 * Never carries a password or a hash: those live only in the account's credential field. Its
 * personal fields (e-mail, user name, first and last name) are sealed under the account's own key
 * when stored (shared/accounts/personal-data.ts), so dropping the key erases them. `securityStamp`
 * is absent from events written before accounts had one (read as LEGACY_SECURITY_STAMP).
 */
export type UserCreatedEvent = DomainEvent<
  'UserCreatedEvent',
  Omit<CreateUser['data'], 'securityStamp'> & {
    readonly createdAt: string;
    readonly securityStamp?: string;
  }
>;

/** The password changed (by the account itself when `byUserId` is its own id). */
export type UserPasswordChangedEvent = DomainEvent<
  'UserPasswordChangedEvent',
  Dated & { readonly securityStamp: string; readonly byUserId: string }
>;

export type UserRolesSetEvent = DomainEvent<
  'UserRolesSetEvent',
  Dated & SetUserRoles['data'] & { readonly byUserId: string }
>;

export type UserDisabledEvent = DomainEvent<
  'UserDisabledEvent',
  Dated & DisableUser['data'] & { readonly byUserId: string }
>;

export type UserEnabledEvent = DomainEvent<'UserEnabledEvent', Dated & { readonly byUserId: string }>;

/** Holds nothing personal: what is left of the account is its id and its tombstone. */
export type UserDeletedEvent = DomainEvent<
  'UserDeletedEvent',
  Dated & DeleteUser['data'] & { readonly byUserId: string }
>;

export type UserEvent =
  | UserCreatedEvent
  | UserPasswordChangedEvent
  | UserRolesSetEvent
  | UserDisabledEvent
  | UserEnabledEvent
  | UserDeletedEvent;
