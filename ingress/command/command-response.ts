/** Error codes of the command endpoint: the spec's COMMAND_VALIDATION_ERROR and the others. */
export type CommandErrorCode =
  | 'COMMAND_VALIDATION_ERROR'
  | 'UNKNOWN_COMMAND_TYPE'
  | 'COMMAND_FORBIDDEN'
  | 'CONCURRENCY_CONFLICT'
  | 'DUPLICATE_REQUEST_ID'
  | 'AGGREGATE_BUSY';

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

export function failed(
  status: 400 | 403 | 409 | 503,
  errorCode: CommandErrorCode,
  errorMessage: string,
  requestId: string | null,
  commandType: string | null,
): CommandAnswer {
  return { status, body: { requestId, success: false, eventCount: 0, errorMessage, errorCode, commandType } };
}
