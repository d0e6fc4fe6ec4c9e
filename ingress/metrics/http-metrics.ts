import type { Request, RequestHandler, Response } from 'express';

import { type Metrics, UNKNOWN_LABEL } from '../../shared/metrics/metrics';

/** Where a route's body names its operation (query, command or importer type), and which names count. */
interface OperationLabel {
  readonly path: readonly string[];
  readonly isKnown: (type: string) => boolean;
}

/**
 * The label rule of a labelled request's route (one object per route, made when the route is
 * registered), kept on its answer. Not in a WeakMap keyed by the answer: every answer would then go
 * through the map's ephemeron table, a cost on every request (ADR 0022).
 */
const OPERATION = Symbol('operation');

/** The operation a request's (already read) body names, or `unknown`. */
function operationOf(body: unknown, { path, isKnown }: OperationLabel): string {
  let value: unknown = body;
  for (const member of path) {
    value =
      typeof value === 'object' && value !== null ? (value as Record<string, unknown>)[member] : undefined;
  }
  return typeof value === 'string' && isKnown(value) ? value : UNKNOWN_LABEL;
}

/** When the request began (performance.now(), ms), kept on its answer until the answer closes. */
const STARTED_AT = Symbol('startedAt');

type TimedResponse = Response & { [STARTED_AT]?: number; [OPERATION]?: OperationLabel };

/**
 * Times every request to its end and records it by route template, operation and status: one
 * histogram observation, no Redis round trip. Registered first, so the time includes everything.
 * On `close` rather than `finish`, so a streamed answer the client cut is counted too. One
 * listener made once for every answer (it reads the answer as `this`) and a float clock: no
 * closure, `once` wrapper or BigInt per request (ADR 0022).
 */
export function recordHttpMetrics(metrics: Metrics): RequestHandler {
  function recordOnClose(this: TimedResponse): void {
    const req = this.req;
    const label = this[OPERATION];
    const seconds = (performance.now() - (this[STARTED_AT] ?? 0)) / 1000;
    metrics.recordHttpRequest(
      {
        method: req.method,
        route: routeTemplate(req),
        status: this.statusCode,
        operation: label && operationOf(req.body, label),
      },
      seconds,
    );
  }
  return (_req, res, next) => {
    (res as TimedResponse)[STARTED_AT] = performance.now();
    res.on('close', recordOnClose);
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
 * `isKnown` accepts it, else `unknown`; the label never holds a caller's made-up name. Placed
 * before authentication, so refused requests are labelled too, but the body is looked at only
 * when the answer is done: it is read after authentication, so a refused request (whose body
 * nobody read) is `unknown`, and labelling never makes the service read a body.
 */
export function labelOperation(path: readonly string[], isKnown: (type: string) => boolean): RequestHandler {
  const label: OperationLabel = { path, isKnown };
  return (_req, res, next) => {
    (res as TimedResponse)[OPERATION] = label;
    next();
  };
}
