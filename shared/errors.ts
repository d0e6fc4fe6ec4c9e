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
  | 'SERVICE_UNAVAILABLE'
  | ProblemCode;

/**
 * The codes a problem body names in its `code` member (an RFC 7807 extension member), each with the
 * one status it is answered with and what it means: a client acts on them without reading `detail`.
 * Other problems carry no code (their status and type say all). The OpenAPI document lists them
 * from here.
 */
export const PROBLEM_CODES = {
  PROJECTION_BEHIND: {
    status: 503,
    meaning:
      'A read-model query named a `minVersion` the projection did not reach within READ_WAIT_MS, or this instance already holds READ_MAX_WAITERS such reads (READ_MAX_WAITERS_PER_ACCOUNT for the caller); retry after Retry-After seconds.',
  },
} as const;

export type ProblemCode = keyof typeof PROBLEM_CODES;

export function isProblemCode(code: string): code is ProblemCode {
  return Object.hasOwn(PROBLEM_CODES, code);
}

/** Field name -> messages, the `errors` member of a 400 validation problem. */
export type FieldErrors = Record<string, string[]>;

export function validationError(errors: FieldErrors): AppError {
  return new AppError('VALIDATION_ERROR', 'One or more validation errors occurred.', 400, { errors });
}

export function serviceUnavailable(reason: string, retryAfterSeconds = 1): AppError {
  return new AppError('SERVICE_UNAVAILABLE', reason, 503, { retryAfterSeconds });
}

/** A read not answered because the projection is behind the version it asked for (ADR 0019). */
export function projectionBehind(reason: string, retryAfterSeconds = 1): AppError {
  return new AppError('PROJECTION_BEHIND', reason, PROBLEM_CODES.PROJECTION_BEHIND.status, {
    retryAfterSeconds,
  });
}
