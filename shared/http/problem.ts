import type { Response } from 'express';

import type { FieldErrors, ProblemCode } from '../errors';
import { sendJsonText } from './json-answer';

/**
 * RFC 7807 problem types and titles, one entry per status the service answers with a problem.
 * The 400, 401 and 500 texts are the spec's (section 7) and must not change by a character.
 */
export const PROBLEMS = {
  400: {
    type: 'https://tools.ietf.org/html/rfc7231#section-6.5.1',
    title: 'One or more validation errors occurred.',
  },
  401: { type: 'https://tools.ietf.org/html/rfc7235#section-3.1', title: 'Unauthorized' },
  403: { type: 'https://tools.ietf.org/html/rfc7231#section-6.5.3', title: 'Forbidden' },
  404: { type: 'https://tools.ietf.org/html/rfc7231#section-6.5.4', title: 'Not Found' },
  405: { type: 'https://tools.ietf.org/html/rfc7231#section-6.5.5', title: 'Method Not Allowed' },
  409: { type: 'https://tools.ietf.org/html/rfc7231#section-6.5.8', title: 'Conflict' },
  413: { type: 'https://tools.ietf.org/html/rfc7231#section-6.5.11', title: 'Payload Too Large' },
  429: { type: 'https://tools.ietf.org/html/rfc6585#section-4', title: 'Too Many Requests' },
  500: {
    type: 'https://tools.ietf.org/html/rfc7231#section-6.6.1',
    title: 'An error occurred while processing your request.',
  },
  503: { type: 'https://tools.ietf.org/html/rfc7231#section-6.6.4', title: 'Service Unavailable' },
} as const;

export type ProblemStatus = keyof typeof PROBLEMS;

export interface ProblemDetails {
  type: string;
  title: string;
  status: number;
  detail?: string;
  /** The problem's code, on the problems that have one (PROBLEM_CODES in shared/errors.ts). */
  code?: ProblemCode;
  errors?: FieldErrors;
  traceId: string;
}

export const PROBLEM_CONTENT_TYPE = 'application/problem+json; charset=utf-8';

/** Builds the problem body for a status; `traceId` is the request id, so a caller can quote it. */
export function problem(
  status: ProblemStatus,
  traceId: string,
  extra: { detail?: string; code?: ProblemCode; errors?: FieldErrors } = {},
): ProblemDetails {
  return { ...PROBLEMS[status], status, ...extra, traceId };
}

export function sendProblem(res: Response, body: ProblemDetails): void {
  sendJsonText(res, body.status, JSON.stringify(body), PROBLEM_CONTENT_TYPE);
}
