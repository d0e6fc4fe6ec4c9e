import { randomUUID } from 'node:crypto';

import type { CommandOutcome } from '../commands/command-answer';
import { refused } from '../commands/command-answer';
import type { CommandIdempotency, CommandRequestKey } from '../commands/command-idempotency';
import { answerOnce, outcomeUnknownMessage, refusalOfStoreError } from '../commands/command-steps';
import type { PasswordHasher } from '../domain/user/password-hasher';
import { type AccountCommandType, USER_COMMAND_ROLES, type UserCommand } from '../domain/user/user.commands';
import { activeUser, userDecider, type UserState } from '../domain/user/user.decider';
import { USER_MESSAGES } from '../domain/user/user.messages';
import { serviceUnavailable } from '../errors';
import type { EventMetadata } from '../event-store/envelope';
import { AppendOutcomeUnknownError } from '../event-store/errors';
import type { CommandHandler, CommandInput } from '../event-store/handle-command';
import { type AssignableRole, hasAnyRole, lacksRolesMessage } from '../roles';
import { CREDENTIAL_FIELD } from './account';
import type { AccountService } from './account.service';
import type { AccountCommandDefinition } from './account-command-definitions';
import { type EnabledAdmins, isEnabledAdmin } from './enabled-admins';

/** Who sends an account command: the authenticated account, and where from (for the throttle). */
export interface AccountCaller {
  readonly userId: string;
  readonly email: string;
  readonly roles: readonly string[];
  /** The client's address as the sign-in throttle counts it (a wrong current password is a failure). */
  readonly clientAddress: string;
}

/** One validated account command, as POST /api/command received it. */
export interface AccountCommandRequest {
  readonly definition: AccountCommandDefinition;
  /** The `command` object, validated by the definition's schema. */
  readonly fields: Readonly<Record<string, unknown>>;
  /** Optimistic concurrency: above 0, the command runs only at the account's version. */
  readonly expectedVersion: number;
  /** Lower case; null when the caller sent none. */
  readonly requestId: string | null;
  /** The HTTP request's X-Request-Id: a trace only. */
  readonly traceId: string;
}

/**
 * Checks an account's current password as a sign-in would, counting a wrong one as a failed sign-in
 * for the throttle (and throwing its 429 problem while the account or address is throttled).
 */
export interface CurrentPasswordCheck {
  matches(email: string, password: string, clientAddress: string): Promise<boolean>;
}

/** What erasing an account takes beyond its UserDeletedEvent (ADR 0014). */
export interface AccountErasure {
  /** Record fields dropped with the event, atomically: the credential and the personal-data key. */
  readonly removedAttachments: readonly string[];
  /**
   * Runs after the account's UserDeletedEvent is written (and again on a retry of the same request):
   * passes its teams to the tombstone. Must be idempotent.
   */
  afterDelete(userId: string, tombstoneId: string, metadata: EventMetadata): Promise<void>;
}

export interface AccountCommandServices {
  readonly commands: CommandHandler;
  readonly idempotency: CommandIdempotency;
  readonly hasher: PasswordHasher;
  readonly accounts: AccountService;
  readonly admins: EnabledAdmins;
  readonly currentPassword: CurrentPasswordCheck;
  readonly erasure: AccountErasure;
}

/** The message of the last-Admin guard's refusal, by command. */
const LAST_ADMIN_MESSAGES: Partial<Record<AccountCommandType, string>> = {
  SetUserRoles: USER_MESSAGES.lastAdminRoles,
  DisableUser: USER_MESSAGES.lastAdminDisable,
  DeleteUser: USER_MESSAGES.lastAdminDelete,
};

/**
 * Runs one account command for its caller: checks the role, answers a repeated requestId with its
 * first outcome (the same caller's only), checks a ChangePassword's current password, hashes a new
 * password, keeps at least one enabled Admin, runs the command on the account (the decider holds
 * the grant rule and the self rules), and finishes an erasure. Every refusal is an outcome; the one
 * error thrown on purpose is the 503 problem of an append whose outcome is unknown.
 */
export function runAccountCommand(
  services: AccountCommandServices,
  caller: AccountCaller,
  request: AccountCommandRequest,
): Promise<CommandOutcome> {
  const { commandType } = request.definition;

  // 1. Authorise: the role here; the grant rule and the self rules in the decider.
  const required = USER_COMMAND_ROLES[commandType];
  if (!hasAnyRole(caller.roles, required)) {
    return Promise.resolve(refused('COMMAND_FORBIDDEN', lacksRolesMessage(caller, commandType, required)));
  }
  // ChangePassword acts on the caller's own account: an id, when given, must be the caller's.
  const named = request.fields.aggregateRootId as string | undefined;
  if (commandType === 'ChangePassword' && named !== undefined && named.toLowerCase() !== caller.userId) {
    return Promise.resolve(refused('COMMAND_VALIDATION_ERROR', USER_MESSAGES.notYourAccount));
  }
  const aggregateId = (commandType === 'ChangePassword' ? caller.userId : String(named)).toLowerCase();

  // 2. A repeated requestId answers what it answered first, to the same caller only.
  const key: CommandRequestKey | null = request.requestId
    ? { callerUserId: caller.userId, requestId: request.requestId, commandType, aggregateId }
    : null;
  return answerOnce(services.idempotency, key, () => runOnAccount(services, caller, request, aggregateId));
}

/** The domain command and what the append carries beside it. */
interface Prepared {
  readonly command: Exclude<UserCommand, { type: 'CreateUser' }>;
  readonly attachments?: Readonly<Record<string, string>>;
  readonly removeAttachments?: readonly string[];
}

/**
 * Step 3: the domain command from the validated fields. A ChangePassword's current password is
 * checked first (a wrong one is a failed sign-in); a new password is hashed before the lock is
 * taken, so the aggregate is never held for a hash.
 */
async function prepare(
  services: AccountCommandServices,
  caller: AccountCaller,
  { definition, fields }: AccountCommandRequest,
): Promise<Prepared | CommandOutcome> {
  const securityStamp = randomUUID();
  const credential = async () => ({
    [CREDENTIAL_FIELD]: await services.hasher.hash(String(fields.newPassword)),
  });
  switch (definition.commandType) {
    case 'ChangePassword': {
      const current = String(fields.currentPassword);
      if (!(await services.currentPassword.matches(caller.email, current, caller.clientAddress))) {
        return refused('COMMAND_VALIDATION_ERROR', USER_MESSAGES.wrongCurrentPassword);
      }
      return {
        command: { type: 'ChangePassword', data: { securityStamp } },
        attachments: await credential(),
      };
    }
    case 'SetUserPassword':
      return {
        command: { type: 'SetUserPassword', data: { securityStamp } },
        attachments: await credential(),
      };
    case 'SetUserRoles':
      return {
        command: {
          type: 'SetUserRoles',
          data: { securityStamp, roles: fields.roles as readonly AssignableRole[] },
        },
      };
    case 'DisableUser':
      return {
        command: {
          type: 'DisableUser',
          data: { securityStamp, reason: (fields.reason as string | null) || null },
        },
      };
    case 'EnableUser':
      return { command: { type: 'EnableUser', data: {} } };
    case 'DeleteUser':
      return {
        command: { type: 'DeleteUser', data: { tombstoneId: randomUUID() } },
        removeAttachments: services.erasure.removedAttachments,
      };
    default: {
      const _exhaustive: never = definition.commandType;
      return _exhaustive;
    }
  }
}

async function runOnAccount(
  services: AccountCommandServices,
  caller: AccountCaller,
  request: AccountCommandRequest,
  aggregateId: string,
): Promise<CommandOutcome> {
  const prepared = await prepare(services, caller, request);
  if ('kind' in prepared) return prepared;
  const { commandType } = request.definition;
  const input: CommandInput<UserCommand> = {
    aggregateId,
    command: prepared.command,
    expectedVersion: request.expectedVersion,
    context: {
      now: new Date(),
      actorUserId: caller.userId,
      actorRoles: caller.roles,
      actorEmail: caller.email,
    },
    // The correlation id is the service's own, never the client's: X-Request-Id is only a trace.
    metadata: {
      actorUserId: caller.userId,
      requestId: request.requestId,
      correlationId: randomUUID(),
      traceId: request.traceId,
    },
    ...(request.requestId ? { requestId: request.requestId } : {}),
    ...(prepared.attachments ? { attachments: prepared.attachments } : {}),
    ...(prepared.removeAttachments ? { removeAttachments: prepared.removeAttachments } : {}),
  };

  // 4. Keep one enabled Admin: an Admin this command would end leaves the set first, atomically and
  //    only if another stays; it goes back if the command writes nothing.
  const leaving = await endsEnabledAdmin(services, input);
  if (leaving && !(await services.admins.release(aggregateId))) {
    return refused(
      'COMMAND_VALIDATION_ERROR',
      LAST_ADMIN_MESSAGES[commandType] ?? USER_MESSAGES.lastAdminRoles,
    );
  }

  // 5. Run it on the account.
  let handled;
  try {
    handled = await services.commands.handle(userDecider, input);
  } catch (error) {
    if (error instanceof AppendOutcomeUnknownError) {
      // Left out of the set: if it was written, it is right; if not, the guard only refuses more.
      throw serviceUnavailable(outcomeUnknownMessage(request.requestId, 'user'));
    }
    if (leaving) await services.admins.add(aggregateId);
    const refusal = refusalOfStoreError(error, 'user');
    if (!refusal) throw error;
    return refusal;
  }
  if (!handled.accepted) {
    if (leaving) await services.admins.add(aggregateId);
    return refused(
      handled.kind === 'forbidden' ? 'COMMAND_FORBIDDEN' : 'COMMAND_VALIDATION_ERROR',
      handled.message,
    );
  }

  // 6. What follows the written events: an account that is now an enabled Admin joins the set; an
  //    erased one's teams pass to its tombstone (again on a replay: that step is idempotent).
  const after = handled.state;
  if (isEnabledAdmin(activeUser(after))) await services.admins.add(aggregateId);
  if (after !== null && 'deleted' in after) {
    await services.erasure.afterDelete(aggregateId, after.tombstoneId, input.metadata);
  }
  return { kind: 'succeeded', eventCount: handled.events.length };
}

/**
 * Whether the command, if the decider accepts it, turns an enabled Admin into something else. Decided
 * on the account as read now (the decider is pure, so this is the same decision the command will
 * get unless the account changes meanwhile); a command the decider refuses needs no guard, and is
 * refused by the real run with its own message (the grant rule before the last-Admin rule).
 */
async function endsEnabledAdmin(
  services: AccountCommandServices,
  input: CommandInput<UserCommand>,
): Promise<boolean> {
  if (!['SetUserRoles', 'DisableUser', 'DeleteUser'].includes(input.command.type)) return false;
  const before = await services.accounts.findById(input.aggregateId);
  if (!isEnabledAdmin(before)) return false;
  const decision = userDecider.decide(input.command, before, input.context);
  if (!decision.accepted) return false;
  const after = decision.events.reduce(
    (state: UserState, event) => userDecider.evolve(state, event),
    before as UserState,
  );
  return !isEnabledAdmin(activeUser(after));
}
