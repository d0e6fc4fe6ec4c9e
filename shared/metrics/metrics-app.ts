import express, { type Express } from 'express';

import { errorHandler, notFound } from '../http/error-handler';
import { requestId } from '../http/request-id';
import { RouteTable } from '../http/route-table';
import type { Logger } from '../logger';
import type { Metrics } from './metrics';
import { registerMetricsRoutes } from './metrics.routes';

/**
 * The app of a METRICS_PORT listener (the ingress's, or a worker's, which has no other HTTP):
 * GET /metrics and the usual problems for anything else. No access log: a scrape every few
 * seconds would drown the log.
 */
export function buildMetricsApp(deps: {
  readonly metrics: Metrics;
  readonly token: string | undefined;
  readonly logger: Logger;
}): Express {
  const app = express();
  app.disable('x-powered-by');
  app.set('etag', false);
  app.use(requestId());
  const routes = new RouteTable(app);
  registerMetricsRoutes(routes, deps);
  app.use(routes.methodNotAllowed());
  app.use(notFound());
  app.use(errorHandler(deps.logger));
  return app;
}
