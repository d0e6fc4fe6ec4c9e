/**
 * The one error type the service raises on purpose. `operational` errors are expected outcomes
 * (bad input, a missing role, Redis away) answered with their status; anything else is a bug and
 * becomes a 500 whose details stay in the log.
 */
export class AppError extends Error {
  override readonly name = 'AppError';

  constructor(
    readonly code: AppErrorCode,
    message: string,
    readonly status: number,
    readonly details: Readonly<Record<string, unknown>> = {},
    readonly operational = true,
  ) {
    super(message);
  }
}

export type AppErrorCode =
  | 'VALIDATION_ERROR'
  | 'UNAUTHORIZED'
  | 'FORBIDDEN'
  | 'NOT_FOUND'
  | 'METHOD_NOT_ALLOWED'
  | 'PAYLOAD_TOO_LARGE'
  | 'TOO_MANY_REQUESTS'
  | 'SERVICE_UNAVAILABLE';

/** Field name -> messages, the `errors` member of a 400 validation problem. */
export type FieldErrors = Record<string, string[]>;

export function validationError(errors: FieldErrors): AppError {
  return new AppError('VALIDATION_ERROR', 'One or more validation errors occurred.', 400, { errors });
}

export function serviceUnavailable(reason: string, retryAfterSeconds = 1): AppError {
  return new AppError('SERVICE_UNAVAILABLE', reason, 503, { retryAfterSeconds });
}
