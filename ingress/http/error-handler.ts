import type { ErrorRequestHandler, RequestHandler } from 'express';

import { AppError } from '../../shared/errors';
import type { Logger } from '../../shared/logger';
import { isRedisUnavailable } from '../../shared/redis/connections';
import { problem, sendProblem } from './problem';

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
      sendProblem(res, problem(error.status, traceId, errors ? { errors } : { detail: error.message }));
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
      const message =
        error.type === 'entity.parse.failed'
          ? 'The request body is not valid JSON.'
          : 'The request body could not be read.';
      sendProblem(res, problem(400, traceId, { errors: { $: [message] } }));
      return;
    }

    if (isRedisUnavailable(error)) {
      logger.warn('request failed: redis unavailable', { error: (error as Error).message });
      res.setHeader('Retry-After', '1');
      sendProblem(
        res,
        problem(503, traceId, { detail: 'The service is temporarily unavailable. Try again shortly.' }),
      );
      return;
    }

    logger.error('unhandled error', { error });
    sendProblem(res, problem(500, traceId));
  };
}
