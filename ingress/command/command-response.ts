import { GUID_SCHEMA, closedObject, type JsonSchema } from '../openapi/json-schema';

/**
 * Error codes of the command endpoint (the spec's COMMAND_VALIDATION_ERROR and the issue's
 * others), each with the one status it is answered with and what it means. The OpenAPI document
 * lists them from here, so a new code is documented where it is made.
 */
export const COMMAND_ERRORS = {
  COMMAND_VALIDATION_ERROR: {
    status: 400,
    meaning:
      "A rule of the spec's tables 3.2 and 7 (the decider's message), a field error naming the field, or a requestId that is not a GUID.",
  },
  UNKNOWN_COMMAND_TYPE: { status: 400, meaning: 'commandType names no command.' },
  COMMAND_FORBIDDEN: {
    status: 403,
    meaning: "The caller lacks the role Member, or is neither the team's owner nor an Admin.",
  },
  CONCURRENCY_CONFLICT: {
    status: 409,
    meaning: "expectedVersion is above 0 and is not the team's version.",
  },
  DUPLICATE_REQUEST_ID: {
    status: 409,
    meaning: 'The requestId was used for another command within 24 hours.',
  },
  AGGREGATE_BUSY: {
    status: 503,
    meaning: "The team's lock was not obtained within LOCK_WAIT_MS; retry after Retry-After seconds.",
  },
} as const;

export type CommandErrorCode = keyof typeof COMMAND_ERRORS;
export type CommandFailureStatus = (typeof COMMAND_ERRORS)[CommandErrorCode]['status'];

/** The spec's 2.6 body: errorMessage and errorCode only on failure. */
export interface CommandResponseBody {
  readonly requestId: string | null;
  readonly success: boolean;
  readonly eventCount: number;
  readonly errorMessage?: string;
  readonly errorCode?: CommandErrorCode;
  readonly commandType: string | null;
}

/** A status and body, ready to send (and to store for idempotent replay). */
export interface CommandAnswer {
  readonly status: number;
  readonly body: CommandResponseBody;
  readonly retryAfterSeconds?: number;
}

export function succeeded(requestId: string | null, commandType: string, eventCount: number): CommandAnswer {
  return { status: 200, body: { requestId, success: true, eventCount, commandType } };
}

/** A refusal; its status is the error code's. */
export function failed(
  errorCode: CommandErrorCode,
  errorMessage: string,
  requestId: string | null,
  commandType: string | null,
): CommandAnswer {
  return {
    status: COMMAND_ERRORS[errorCode].status,
    body: { requestId, success: false, eventCount: 0, errorMessage, errorCode, commandType },
  };
}

/** The error codes answered with `status`, in the table's order. */
export function commandErrorCodesFor(status: CommandFailureStatus): CommandErrorCode[] {
  return (Object.keys(COMMAND_ERRORS) as CommandErrorCode[]).filter(
    (code) => COMMAND_ERRORS[code].status === status,
  );
}

const requestIdSchema: JsonSchema = {
  ...GUID_SCHEMA,
  type: ['string', 'null'],
  description: "Echo of the request's requestId (lower case), or null when none was given.",
};

/** The JSON Schema of a 200 answer (spec 2.6): success, one event per accepted command. */
export const COMMAND_SUCCEEDED_SCHEMA: JsonSchema = closedObject(
  {
    requestId: requestIdSchema,
    success: { const: true },
    eventCount: {
      type: 'integer',
      minimum: 0,
      description: 'Events raised: 1 for the commands of the spec.',
    },
    commandType: { type: 'string' },
  },
  [],
  { title: 'CommandSucceeded' },
);

/** The JSON Schema of a refusal with `status` (spec 2.6): the codes of that status only. */
export function commandFailedSchema(status: CommandFailureStatus): JsonSchema {
  const codes = commandErrorCodesFor(status);
  return closedObject(
    {
      requestId: requestIdSchema,
      success: { const: false },
      eventCount: { const: 0 },
      errorMessage: { type: 'string' },
      errorCode: codes.length === 1 ? { const: codes[0] } : { enum: codes },
      commandType: {
        type: ['string', 'null'],
        description: 'The commandType sent, or null when it was not a string.',
      },
    },
    [],
    { title: `CommandFailed${status}` },
  );
}
