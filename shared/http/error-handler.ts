import type { ErrorRequestHandler, RequestHandler } from 'express';

import { AppError, isProblemCode } from '../errors';
import { AppendOutcomeUnknownError } from '../event-store/errors';
import type { Logger } from '../logger';
import { isRedisOutOfMemory, isRedisUnavailable } from '../redis/connections';
import { problem, sendProblem } from './problem';
import { BODY_MESSAGES, BodyRefusal } from './request-body';

/** body-parser marks its errors with a `type`; these are the caller's fault, not ours. */
interface BodyParserError extends Error {
  type?: string;
  status?: number;
  limit?: number;
}

/**
 * body-parser marks the errors it raises with a `type`, but passes on a failing decompression
 * stream's error (a corrupt gzip, deflate or br body) as a bare http-errors 400: `expose`, a 4xx
 * status and no type. Both are about the caller's body.
 */
function isBodyParserError(error: unknown): error is BodyParserError {
  if (!(error instanceof Error)) return false;
  const { type, status, expose } = error as BodyParserError & { expose?: unknown };
  return (
    typeof type === 'string' ||
    (expose === true && typeof status === 'number' && status >= 400 && status < 500)
  );
}

/**
 * A full Redis stays full until someone acts, unlike a dropped connection (Retry-After: 1): ask
 * clients to come back later rather than hammer it.
 */
export const REDIS_OUT_OF_MEMORY_RETRY_AFTER_SECONDS = 30;

/** The 503's detail when Redis is away for a moment (a timeout, a lost connection): resend it. */
export const TEMPORARILY_UNAVAILABLE_DETAIL = 'The service is temporarily unavailable. Try again shortly.';

/** Unknown paths: a 404 problem. Registered after every route. */
export function notFound(): RequestHandler {
  return (req, res) => {
    sendProblem(res, problem(404, req.requestId, { detail: `No endpoint at ${req.method} ${req.path}.` }));
  };
}

/**
 * The one place errors become responses. Operational errors keep their status and message;
 * anything else is logged with its stack and answered with the spec's bare 500 problem.
 */
export function errorHandler(logger: Logger): ErrorRequestHandler {
  return (error: unknown, req, res, next) => {
    if (res.headersSent) {
      next(error);
      return;
    }
    const traceId = req.requestId;

    if (error instanceof AppError) {
      const retryAfter = error.details.retryAfterSeconds;
      if (typeof retryAfter === 'number') res.setHeader('Retry-After', String(retryAfter));
      const errors = error.details.errors as Record<string, string[]> | undefined;
      const code = isProblemCode(error.code) ? { code: error.code } : {};
      sendProblem(
        res,
        problem(error.status, traceId, errors ? { errors } : { detail: error.message, ...code }),
      );
      return;
    }

    if (isBodyParserError(error)) {
      if (error.type === 'entity.too.large') {
        sendProblem(
          res,
          problem(413, traceId, {
            detail: `The request body is larger than ${error.limit ?? 'the'} bytes allowed.`,
          }),
        );
        return;
      }
      // Our own refusals (too deep, not UTF-8, an encoding not accepted) say what was wrong.
      const message =
        error instanceof BodyRefusal
          ? error.message
          : error.type === 'entity.parse.failed'
            ? BODY_MESSAGES.notJson
            : BODY_MESSAGES.unreadable;
      sendProblem(res, problem(400, traceId, { errors: { $: [message] } }));
      return;
    }

    if (isRedisOutOfMemory(error)) {
      // Not the caller's fault and not a bug: Redis is full (noeviction) and refuses writes until
      // an operator frees memory or raises maxmemory. An error line, since it will not pass alone.
      logger.error('request failed: redis out of memory', { error: (error as Error).message });
      res.setHeader('Retry-After', String(REDIS_OUT_OF_MEMORY_RETRY_AFTER_SECONDS));
      sendProblem(
        res,
        problem(503, traceId, { detail: 'The service cannot store data right now. Try again later.' }),
      );
      return;
    }

    // An append whose answer Redis took with it, where no use case words it (a command does: it
    // may have taken effect, resend with its requestId): Redis went away mid-write, the same
    // outage. An inline import is one: the workers take it over, and a resend finds its job.
    if (isRedisUnavailable(error) || error instanceof AppendOutcomeUnknownError) {
      logger.warn('request failed: redis unavailable', { error: (error as Error).message });
      res.setHeader('Retry-After', '1');
      sendProblem(res, problem(503, traceId, { detail: TEMPORARILY_UNAVAILABLE_DETAIL }));
      return;
    }

    logger.error('unhandled error', { error });
    sendProblem(res, problem(500, traceId));
  };
}
