import { SERVICE_ACTOR_ID } from '../event-store/decider';
import type { ActiveUser } from '../user/user.decider';

/** Whoever a command runs as: an authenticated account, or the service itself. */
export interface Actor {
  readonly userId: string;
  readonly email: string;
  readonly roles: readonly string[];
}

/** The service acting on its own behalf (bootstrap); it holds no account. */
export const SYSTEM_ACTOR: Actor = Object.freeze({
  userId: SERVICE_ACTOR_ID,
  email: 'system',
  roles: Object.freeze(['Admin']),
});

/** A live account as the rest of the service sees it: the user's state and its version. */
export type Account = ActiveUser & { readonly version: number };

/** The record attachment holding the password hash; nothing else ever reads or returns it. */
export const CREDENTIAL_FIELD = 'credential';
