import { AsyncLocalStorage } from 'node:async_hooks';

import type { RequestHandler } from 'express';

import type { Logger } from '../../shared/logger';
import { currentContext } from '../../shared/request-context';

/** One access line per finished request: method, path (no query string), status, duration, ids. */
export function accessLog(logger: Logger): RequestHandler {
  return (req, res, next) => {
    // Formatting a line that the level then drops costs as much as writing it.
    if (!logger.isInfoEnabled()) {
      next();
      return;
    }
    const started = process.hrtime.bigint();
    const context = currentContext();
    // Bound: 'finish' comes from the connection's write, outside the request's context, and the
    // line carries the request's trace (`trace_id`) when tracing is on.
    res.on(
      'finish',
      AsyncLocalStorage.bind(() => {
        logger.info('request finished', {
          method: req.method,
          path: req.path,
          status: res.statusCode,
          durationMs: Number(process.hrtime.bigint() - started) / 1e6,
          requestId: req.requestId,
          clientAddress: req.ip,
          userId: context?.userId,
        });
      }),
    );
    next();
  };
}
