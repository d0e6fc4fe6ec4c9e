import type { Request, RequestHandler, Response } from 'express';

import { UNKNOWN_LABEL, type Metrics } from '../../shared/metrics/metrics';

/** The operation (query, command or importer type) a route has labelled its request with. */
const operations = new WeakMap<Response, string>();

/**
 * Times every request to its end and records it by route template, operation and status: one
 * histogram observation, no Redis round trip. Registered first, so the time includes everything.
 * On `close` rather than `finish`, so a streamed answer the client cut is counted too.
 */
export function recordHttpMetrics(metrics: Metrics): RequestHandler {
  return (req, res, next) => {
    const started = process.hrtime.bigint();
    res.once('close', () => {
      const operation = operations.get(res);
      metrics.recordHttpRequest(
        {
          method: req.method,
          route: routeTemplate(req),
          status: res.statusCode,
          ...(operation === undefined ? {} : { operation }),
        },
        Number(process.hrtime.bigint() - started) / 1e9,
      );
    });
    next();
  };
}

/** `/api/readmodel`, `/admin/queues/api/queues/:queueName`: the template, never the raw path. */
function routeTemplate(req: Request): string {
  const route = req.route as { path?: unknown } | undefined;
  if (typeof route?.path === 'string') return req.baseUrl + route.path;
  // Inside a mounted app without a route of its own (the Bull Board's static files).
  if (req.baseUrl) return `${req.baseUrl}/*`;
  return UNKNOWN_LABEL;
}

/**
 * Labels the request with the type its body names at `path` (`['query', 'queryType']`) when
 * `isKnown` accepts it, else `unknown`. Placed before authentication, so refused requests are
 * labelled too; the label never holds a caller's made-up name.
 */
export function labelOperation(path: readonly string[], isKnown: (type: string) => boolean): RequestHandler {
  return (req, res, next) => {
    let value: unknown = req.body;
    for (const member of path) {
      value =
        typeof value === 'object' && value !== null ? (value as Record<string, unknown>)[member] : undefined;
    }
    operations.set(res, typeof value === 'string' && isKnown(value) ? value : UNKNOWN_LABEL);
    next();
  };
}
