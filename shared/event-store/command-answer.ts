/**
 * Error codes of the command endpoint (the spec's COMMAND_VALIDATION_ERROR and the service's own),
 * each with the one status it is answered with and what it means. The OpenAPI document lists them
 * from here, so a new code is documented where it is made.
 */
export const COMMAND_ERRORS = {
  COMMAND_VALIDATION_ERROR: {
    status: 400,
    meaning:
      "A rule of the spec's tables 3.2 and 7 (the decider's message), a field error naming the field, a requestId that is not a GUID, a team command on a team that is neither the caller's nor an Admin's (answered as a missing team), or a CreateFantasyTeam beyond the owner's MAX_TEAMS_PER_OWNER teams. For account commands: a rule of the account (a non-existent user, a wrong current password, the last enabled Admin, an account disabling or deleting itself).",
  },
  UNKNOWN_COMMAND_TYPE: { status: 400, meaning: 'commandType names no command.' },
  COMMAND_FORBIDDEN: {
    status: 403,
    meaning:
      "The caller lacks the command's roles (Member for team commands; each account command's are in x-command-types), or the grant rule forbids the account command (a UserManager acts only on Member accounts and grants only Member).",
  },
  CONCURRENCY_CONFLICT: {
    status: 409,
    meaning: "expectedVersion is above 0 and is not the aggregate's version (the team's, or the account's).",
  },
  DUPLICATE_REQUEST_ID: {
    status: 409,
    meaning:
      'The caller used the requestId for another command within 24 hours (a requestId belongs to its caller).',
  },
  AGGREGATE_BUSY: {
    status: 503,
    meaning:
      "The aggregate's (team's or account's) lock was not obtained within LOCK_WAIT_MS; retry after Retry-After seconds.",
  },
} as const;

export type CommandErrorCode = keyof typeof COMMAND_ERRORS;
export type CommandFailureStatus = (typeof COMMAND_ERRORS)[CommandErrorCode]['status'];

/** How long a caller answered AGGREGATE_BUSY is asked to wait. */
const BUSY_RETRY_AFTER_SECONDS = 1;

/**
 * What a command request came to: accepted with its events, or refused with one of the endpoint's
 * codes. Every path of the command endpoint ends in one (validation, the use case, a replay), and
 * `commandAnswer` is the one place one becomes the spec's 2.6 answer.
 */
export type CommandOutcome =
  | {
      readonly kind: 'succeeded';
      readonly eventCount: number;
      /**
       * The aggregate's version once the command's events are written (unchanged when it decided
       * none; on a repeat, the version the first answer named). A read with `minVersion` at it sees
       * the write (ADR 0019). Every success has one, and the contract says so (`version` is required
       * in CommandSucceeded); optional here only for an answer remembered before versions were
       * answered, which the replay window (24 h) dropped long ago.
       */
      readonly version?: number;
      /**
       * A webhook subscription's new signing secret (CreateWebhookSubscription,
       * RotateWebhookSecret): answered once, never remembered (see SECRET_NOT_REPEATED).
       */
      readonly signingSecret?: string;
      /** Said beside a success: why a replayed answer carries no signing secret. */
      readonly note?: string;
    }
  | { readonly kind: 'refused'; readonly code: CommandErrorCode; readonly message: string };

export function refused(code: CommandErrorCode, message: string): CommandOutcome {
  return { kind: 'refused', code, message };
}

/** The note of a repeated answer that carried a signing secret the first time. */
export const SECRET_NOT_REPEATED =
  'This requestId was answered before: the signing secret is only in that first answer. If it was lost, send RotateWebhookSecret.';

/**
 * The outcome as it may be remembered: a signing secret is never kept (the idempotency store is
 * plain Redis), and a repeat is told why it does not get one.
 */
export function withoutSecret(outcome: CommandOutcome): CommandOutcome {
  if (outcome.kind !== 'succeeded' || outcome.signingSecret === undefined) return outcome;
  const { signingSecret: _secret, ...kept } = outcome;
  return { ...kept, note: SECRET_NOT_REPEATED };
}

/**
 * The spec's 2.6 body: errorMessage and errorCode only on failure. `version`, `signingSecret` and
 * `note` are the service's additions: `version` on every success (see CommandOutcome), the others
 * only on the answers that need them.
 */
export interface CommandResponseBody {
  readonly requestId: string | null;
  readonly success: boolean;
  readonly eventCount: number;
  readonly errorMessage?: string;
  readonly errorCode?: CommandErrorCode;
  readonly commandType: string | null;
  readonly version?: number;
  readonly signingSecret?: string;
  readonly note?: string;
}

/**
 * A status and body, ready to send. It is also the form a remembered answer is kept in (the
 * command idempotency), which is why it is made here and not in the HTTP layer.
 */
export interface CommandAnswer {
  readonly status: number;
  readonly body: CommandResponseBody;
  readonly retryAfterSeconds?: number;
}

/** The spec's 2.6 answer to an outcome: a refusal's status is its code's. */
export function commandAnswer(
  outcome: CommandOutcome,
  requestId: string | null,
  commandType: string | null,
): CommandAnswer {
  if (outcome.kind === 'succeeded') {
    const { eventCount, version, signingSecret, note } = outcome;
    return {
      status: 200,
      body: {
        requestId,
        success: true,
        eventCount,
        commandType: commandType,
        ...(version !== undefined ? { version } : {}),
        ...(signingSecret !== undefined ? { signingSecret } : {}),
        ...(note !== undefined ? { note } : {}),
      },
    };
  }
  const { code, message } = outcome;
  return {
    status: COMMAND_ERRORS[code].status,
    body: { requestId, success: false, eventCount: 0, errorMessage: message, errorCode: code, commandType },
    ...(code === 'AGGREGATE_BUSY' ? { retryAfterSeconds: BUSY_RETRY_AFTER_SECONDS } : {}),
  };
}

/** The outcome an answer was made from (`commandAnswer` backwards), for a remembered answer. */
export function outcomeOf(answer: CommandAnswer): CommandOutcome {
  const { body } = answer;
  if (body.success) {
    return {
      kind: 'succeeded',
      eventCount: body.eventCount,
      ...(body.version !== undefined ? { version: body.version } : {}),
      ...(body.note !== undefined ? { note: body.note } : {}),
    };
  }
  return refused(body.errorCode ?? 'COMMAND_VALIDATION_ERROR', body.errorMessage ?? '');
}

/** The error codes answered with `status`, in the table's order. */
export function commandErrorCodesFor(status: CommandFailureStatus): CommandErrorCode[] {
  return (Object.keys(COMMAND_ERRORS) as CommandErrorCode[]).filter(
    (code) => COMMAND_ERRORS[code].status === status,
  );
}
