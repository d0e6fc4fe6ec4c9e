import { randomUUID } from 'node:crypto';

import { CREDENTIAL_FIELD } from '../../shared/accounts/account';
import type { AccountService } from '../../shared/accounts/account.service';
import type { AccountErasure } from '../../shared/accounts/account-erasure';
import { type EnabledAdmins, enabledAdminSteps } from '../../shared/accounts/enabled-admins';
import { serviceUnavailable } from '../../shared/errors';
import type { CommandOutcome } from '../../shared/event-store/command-answer';
import { refused } from '../../shared/event-store/command-answer';
import type { CommandIdempotency, CommandRequestKey } from '../../shared/event-store/command-idempotency';
import type { DecisionContext } from '../../shared/event-store/decider';
import type { EventMetadata } from '../../shared/event-store/envelope';
import { AppendOutcomeUnknownError, ExpectedVersionMismatchError } from '../../shared/event-store/errors';
import type { EventStore } from '../../shared/event-store/event-store';
import { requestRecordField } from '../../shared/event-store/event-store';
import type { CommandHandler, CommandInput } from '../../shared/event-store/handle-command';
import { type AssignableRole, hasAnyRole, lacksRolesMessage } from '../../shared/roles';
import type { PasswordHasher } from '../../shared/user/password-hasher';
import type { AccountCommandDefinition } from '../../shared/user/user.commands';
import type { AccountCommandType, UserCommand } from '../../shared/user/user.commands';
import { isDeletedUser, userDecider, type UserState } from '../../shared/user/user.decider';
import { USER_MESSAGES } from '../../shared/user/user.messages';
import { answerOnce, type CommandRequest, outcomeUnknownMessage, refusalOfStoreError } from './command-steps';

/** Who sends an account command: the authenticated account, and where from (for the throttle). */
export interface AccountCaller {
  readonly userId: string;
  readonly email: string;
  readonly roles: readonly string[];
  /** The client's address as the sign-in throttle counts it (a wrong current password is a failure). */
  readonly clientAddress: string;
}

/** One validated account command, as POST /api/command received it. */
export type AccountCommandRequest = CommandRequest<AccountCommandDefinition>;

/**
 * Checks an account's current password as a sign-in would, counting a wrong one as a failed sign-in
 * for the throttle (and throwing its 429 problem while the account or address is throttled).
 */
export interface CurrentPasswordCheck {
  matches(email: string, password: string, clientAddress: string): Promise<boolean>;
}

/**
 * Hashes a password being set, within the bound the sign-in verifications share (a hash takes a
 * hashing thread either way), throwing its 503 problem past it.
 */
export type NewPasswordHasher = Pick<PasswordHasher, 'hash'>;

export interface AccountCommandServices {
  readonly commands: CommandHandler;
  /** For the checks made before a password is checked or hashed (refusedBeforeWork). */
  readonly store: EventStore;
  readonly idempotency: CommandIdempotency;
  readonly newPasswordHasher: NewPasswordHasher;
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
 * Runs one account command for its caller: (1) checks the role, (2) answers a repeated requestId
 * with its first outcome (the same caller's only), (3) refuses before any password work what the
 * account, the grant rule or expectedVersion refuses, (4) checks a ChangePassword's current password
 * and hashes a new password, (5) runs the command on the account (the decider holds the grant rule
 * and the self rules) keeping one enabled Admin under its lock, and (6) finishes an erasure. Every
 * refusal is an outcome; the errors thrown on purpose are problems: the 503 of an append whose
 * outcome is unknown, and the sign-in throttle's 429 and the verifications' 503 around passwords.
 */
export function runAccountCommand(
  services: AccountCommandServices,
  caller: AccountCaller,
  request: AccountCommandRequest,
): Promise<CommandOutcome> {
  const { commandType, roles: required } = request.definition;

  // 1. Authorise: the role here; the grant rule and the self rules in the decider.
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
 * Step 4: the domain command from the validated fields. A ChangePassword's current password is
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
    [CREDENTIAL_FIELD]: await services.newPasswordHasher.hash(String(fields.newPassword)),
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

/**
 * Step 3, before any password is checked or hashed: the command decided on the account as read now
 * (the decider is pure: the locked run decides the same unless the account changes meanwhile, and
 * it stays the authority), the caller's expectedVersion, and whether this requestId was applied
 * already. A command refused here costs no hash, so a caller cannot make the service hash for
 * commands that change nothing; a retry of an applied ChangePassword is answered as applied, not
 * checked against a current password that it changed itself. Undefined: go on.
 */
async function refusedBeforeWork(
  services: AccountCommandServices,
  caller: AccountCaller,
  request: AccountCommandRequest,
  aggregateId: string,
): Promise<CommandOutcome | 'applied' | undefined> {
  const { commandType } = request.definition;
  if (!['ChangePassword', 'SetUserPassword'].includes(commandType)) return undefined;
  const requestField = request.requestId ? requestRecordField(caller.userId, request.requestId) : null;
  const [applied, record] = await Promise.all([
    requestField ? services.store.hasApplied(userDecider.aggregateType, aggregateId, requestField) : false,
    services.store.loadRecord(userDecider.aggregateType, aggregateId, userDecider.initialState),
  ]);
  if (applied) return 'applied';
  if (request.expectedVersion && request.expectedVersion !== record.version) {
    const mismatch = new ExpectedVersionMismatchError(aggregateId, request.expectedVersion, record.version);
    return refusalOfStoreError(mismatch, 'user');
  }
  // The stamp is a placeholder: the decision depends on the account and the actor, not on it.
  const command = { type: commandType, data: { securityStamp: '' } } as Exclude<
    UserCommand,
    { type: 'CreateUser' }
  >;
  const decision = userDecider.decide(command, record.state, contextOf(caller));
  if (decision.accepted) return undefined;
  return refused(
    decision.kind === 'forbidden' ? 'COMMAND_FORBIDDEN' : 'COMMAND_VALIDATION_ERROR',
    decision.message,
  );
}

/**
 * A retry of a request the account recorded already: handle() answers it with the events it wrote
 * (no new decision, no password needed), so it runs with a command that needs no secret.
 */
async function runApplied(
  services: AccountCommandServices,
  caller: AccountCaller,
  request: AccountCommandRequest,
  aggregateId: string,
): Promise<CommandOutcome> {
  const command = { type: request.definition.commandType, data: { securityStamp: randomUUID() } } as Exclude<
    UserCommand,
    { type: 'CreateUser' }
  >;
  return handleOnAccount(services, request, {
    aggregateId,
    command,
    context: contextOf(caller),
    metadata: metadataOf(caller, request),
    ...(request.requestId ? { requestId: request.requestId } : {}),
  });
}

async function runOnAccount(
  services: AccountCommandServices,
  caller: AccountCaller,
  request: AccountCommandRequest,
  aggregateId: string,
): Promise<CommandOutcome> {
  const early = await refusedBeforeWork(services, caller, request, aggregateId);
  if (early === 'applied') return runApplied(services, caller, request, aggregateId);
  if (early) return early;
  const prepared = await prepare(services, caller, request);
  if ('kind' in prepared) return prepared;
  const { commandType } = request.definition;
  return handleOnAccount(services, request, {
    aggregateId,
    command: prepared.command,
    expectedVersion: request.expectedVersion,
    context: contextOf(caller),
    metadata: metadataOf(caller, request),
    ...(request.requestId ? { requestId: request.requestId } : {}),
    ...(prepared.attachments ? { attachments: prepared.attachments } : {}),
    ...(prepared.removeAttachments ? { removeAttachments: prepared.removeAttachments } : {}),
    // 5. Keep one enabled Admin: decided on the account as locked (ADR 0014).
    underLock: enabledAdminSteps(
      services.admins,
      aggregateId,
      LAST_ADMIN_MESSAGES[commandType] ?? USER_MESSAGES.lastAdminRoles,
    ),
  });
}

function contextOf(caller: AccountCaller): DecisionContext {
  return { now: new Date(), actorUserId: caller.userId, actorRoles: caller.roles, actorEmail: caller.email };
}

/** The correlation id is the service's own, never the client's: X-Request-Id is only a trace. */
function metadataOf(caller: AccountCaller, request: AccountCommandRequest): EventMetadata {
  return {
    actorUserId: caller.userId,
    requestId: request.requestId,
    correlationId: randomUUID(),
    traceId: request.traceId,
  };
}

/** Step 5: the command on the account, its outcome as the endpoint's; 6: an erasure finished. */
async function handleOnAccount(
  services: AccountCommandServices,
  request: AccountCommandRequest,
  input: CommandInput<UserCommand, UserState>,
): Promise<CommandOutcome> {
  let handled;
  try {
    handled = await services.commands.handle(userDecider, input);
  } catch (error) {
    if (error instanceof AppendOutcomeUnknownError) {
      // A deletion that is on the master but not yet confirmed on a replica (WRITE_DURABILITY) has
      // dropped the credential and the personal-data key already: its teams pass to the tombstone
      // now too, rather than only when the caller retries (step 6 is idempotent; a failure of it
      // is left to that retry).
      if (error.reason === 'unreplicated' && input.command.type === 'DeleteUser') {
        // The tombstone as stored: an earlier attempt's, should that be the one that was written.
        await services.erasure.finishErasure(input.aggregateId, input.metadata).catch(() => undefined);
      }
      throw serviceUnavailable(outcomeUnknownMessage(request.requestId, 'user', error.reason));
    }
    const refusal = refusalOfStoreError(error, 'user');
    if (!refusal) throw error;
    return refusal;
  }
  if (!handled.accepted) {
    const code = handled.kind === 'forbidden' ? 'COMMAND_FORBIDDEN' : 'COMMAND_VALIDATION_ERROR';
    return refused(code, handled.message);
  }
  // 6. An erased account's teams pass to its tombstone (again on a replay: that step is idempotent).
  const after = handled.state;
  if (isDeletedUser(after)) {
    await services.erasure.afterDelete(input.aggregateId, after.tombstoneId, input.metadata);
  }
  return { kind: 'succeeded', eventCount: handled.events.length, version: handled.version };
}
