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
    readonly status: ErrorStatus,
    readonly details: Readonly<Record<string, unknown>> = {},
    readonly operational = true,
  ) {
    super(message);
  }
}

/** Statuses an AppError may carry: each has a problem type and title in ingress/http/problem.ts. */
export type ErrorStatus = 400 | 401 | 403 | 404 | 405 | 409 | 413 | 429 | 503;

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
