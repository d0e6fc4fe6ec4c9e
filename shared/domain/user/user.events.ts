import type { DomainEvent } from '../decider';
import type { CreateUser } from './user.commands';

/** Never carries a password or a hash: those live only in the account's credential field. */
export type UserCreatedEvent = DomainEvent<
  'UserCreatedEvent',
  CreateUser['data'] & { readonly createdAt: string }
>;

export type UserEvent = UserCreatedEvent;
