import { randomUUID } from 'node:crypto';

import type { EventMetadata } from '../event-store/envelope';
import type { EventStore } from '../event-store/event-store';
import type { CommandHandler } from '../event-store/handle-command';
import { type AssignableRole, grantRefusal, hasAnyRole, lacksRolesMessage } from '../roles';
import type { PasswordHasher } from '../user/password-hasher';
import { USER_COMMAND_ROLES, type UserType } from '../user/user.commands';
import { activeUser, userDecider } from '../user/user.decider';
import type { UserEvent } from '../user/user.events';
import { USER_MESSAGES } from '../user/user.messages';
import { normalizeEmail } from '../user/user-id';
import { type Account, type Actor, CREDENTIAL_FIELD } from './account';
import { type EnabledAdmins, enabledAdminSteps } from './enabled-admins';
import { newPersonalDataKey, PERSONAL_DATA_KEY_FIELD } from './personal-data';
import type { UserIds } from './user-ids';

/** What createUser needs of the erasure (account-erasure.ts): finishing one a crash cut short. */
export interface ErasureFinisher {
  /** When the account is erased, runs what follows its UserDeletedEvent again; else nothing. */
  finishErasure(userId: string, metadata: EventMetadata): Promise<void>;
}

export interface NewUser {
  readonly email: string;
  readonly userName?: string | undefined;
  readonly userType: UserType;
  readonly roles: readonly AssignableRole[];
  readonly firstName?: string | null | undefined;
  readonly lastName?: string | null | undefined;
  readonly password?: string | undefined;
  readonly emailVerified?: boolean | undefined;
}

export type CreateUserResult =
  /** `replayed`: an earlier attempt of the same import (same correlation id) created it. */
  | {
      readonly status: 'created';
      readonly userId: string;
      readonly eventCount: number;
      readonly replayed?: boolean;
    }
  | { readonly status: 'exists'; readonly userId: string; readonly message: string }
  | { readonly status: 'forbidden'; readonly userId: string; readonly message: string };

/** Accounts: creating users (through the event store) and reading them back. */
export class AccountService {
  constructor(
    private readonly store: EventStore,
    private readonly commands: CommandHandler,
    private readonly hasher: PasswordHasher,
    /** The last-Admin guard's set: an account created with Admin joins it. */
    private readonly admins: EnabledAdmins,
    /** Before an erased account's e-mail is registered again, its erasure is finished (ADR 0014). */
    private readonly erasure: ErasureFinisher,
    /** Which id an e-mail's account has: keyed for new ones, kept for older ones (ADR 0035). */
    readonly userIds: UserIds,
    private readonly clock: () => Date = () => new Date(),
  ) {}

  /**
   * Runs CreateUser as `actor`: role check, hash, then lock, decide and append, with a fresh
   * personal-data key attached (the creation's personal fields are sealed under it). `knownAbsent`
   * skips the early existence check its caller has just made; the decider still refuses a duplicate.
   * An erased account's e-mail may be registered again (same user id, new key, ADR 0014): its
   * erasure is finished first, so the new account starts with nothing of the old one's.
   */
  async createUser(
    actor: Actor,
    user: NewUser,
    metadata: Omit<EventMetadata, 'actorUserId'>,
    options: { readonly knownAbsent?: boolean } = {},
  ): Promise<CreateUserResult> {
    const email = normalizeEmail(user.email);
    const userId = await this.userIds.idFor(email);
    const required = USER_COMMAND_ROLES.CreateUser;
    if (!hasAnyRole(actor.roles, required)) {
      return { status: 'forbidden', userId, message: lacksRolesMessage(actor, 'CreateUser', required) };
    }
    const grantRefused = grantRefusal(actor, user.roles);
    if (grantRefused !== undefined) return { status: 'forbidden', userId, message: grantRefused };
    // Cheap early answer so a duplicate does not cost a hash; the decider stays the authority.
    const existing = options.knownAbsent ? null : await this.existing(userId, metadata.correlationId);
    if (existing) return existing;
    const credential = user.password === undefined ? undefined : await this.hasher.hash(user.password);
    await this.erasure.finishErasure(userId, { ...metadata, actorUserId: actor.userId });

    const outcome = await this.commands.handle(userDecider, {
      aggregateId: userId,
      command: {
        type: 'CreateUser',
        data: {
          userId,
          email,
          userName: user.userName ?? email,
          userType: user.userType,
          roles: [...new Set(user.roles)],
          firstName: user.firstName ?? null,
          lastName: user.lastName ?? null,
          emailVerified: user.emailVerified ?? false,
          securityStamp: randomUUID(),
        },
      },
      context: { now: this.clock(), actorUserId: actor.userId, actorRoles: actor.roles },
      metadata: { ...metadata, actorUserId: actor.userId },
      attachments: {
        // Fresh with every creation: a re-registered e-mail's account never holds its predecessor's.
        [PERSONAL_DATA_KEY_FIELD]: newPersonalDataKey(),
        ...(credential ? { [CREDENTIAL_FIELD]: credential } : {}),
      },
      // An account created with Admin joins the enabled Admins under its lock (nothing leaves).
      underLock: enabledAdminSteps(this.admins, userId, USER_MESSAGES.lastAdminRoles),
    });
    if (!outcome.accepted)
      return (
        (await this.existing(userId, metadata.correlationId)) ?? {
          status: 'exists',
          userId,
          message: outcome.message,
        }
      );
    return { status: 'created', userId, eventCount: outcome.events.length };
  }

  /**
   * How an existing account answers a create: `exists`, or, when the same correlation id (an import
   * job) made its latest creation, `created` again, so a retried import counts its own work once and
   * fails on none. An erased account is no account (null): its e-mail may be registered again. Reads
   * the record and the stream's event headers (never their personal data) together.
   */
  async existing(userId: string, correlationId: string | null): Promise<CreateUserResult | null> {
    const { aggregateType, initialState } = userDecider;
    const [{ state }, headers] = await Promise.all([
      this.store.loadRecord(aggregateType, userId, initialState),
      this.store.readHeaders(aggregateType, userId),
    ]);
    const creation = headers.findLast((event) => event.eventType === 'UserCreatedEvent');
    if (correlationId !== null && creation?.metadata.correlationId === correlationId) {
      return { status: 'created', userId, eventCount: 1, replayed: true };
    }
    if (!activeUser(state)) return null;
    return { status: 'exists', userId, message: USER_MESSAGES.alreadyExists };
  }

  async findById(userId: string): Promise<Account | null> {
    const { version, state } = await this.store.loadRecord(
      userDecider.aggregateType,
      userId,
      userDecider.initialState,
    );
    const account = activeUser(state);
    return account === null ? null : { ...account, version };
  }

  /** The account and its stored password hash (null when it has none): for sign-in only. */
  async findWithCredential(email: string): Promise<{ account: Account | null; credential: string | null }> {
    const record = await this.store.loadRecordWith(
      userDecider.aggregateType,
      await this.userIds.idFor(email),
      userDecider.initialState,
      CREDENTIAL_FIELD,
    );
    const account = activeUser(record.state);
    if (account === null) return { account: null, credential: null };
    return { account: { ...account, version: record.version }, credential: record.attachment };
  }

  /** Every event of a user's stream, for tests and audits. */
  readEvents(userId: string): Promise<readonly { eventType: UserEvent['type'] }[]> {
    return this.store.readStream(userDecider.aggregateType, userId) as Promise<
      readonly { eventType: UserEvent['type'] }[]
    >;
  }
}
