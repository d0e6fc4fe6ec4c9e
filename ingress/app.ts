import express, { type Express } from 'express';

import type { Config } from '../shared/config';
import { errorHandler, notFound } from '../shared/http/error-handler';
import { lingerWhenBodyUnread } from '../shared/http/lingering-close';
import { requestId } from '../shared/http/request-id';
import { RouteTable } from '../shared/http/route-table';
import type { Logger } from '../shared/logger';
import type { Metrics } from '../shared/metrics/metrics';
import type { RedisClient } from '../shared/redis/connections';
import { tracingOn } from '../shared/tracing/spans';
import { BULL_BOARD_PATH, registerBullBoard } from './admin/bull-board';
import { registerTokenRoutes } from './auth/token.routes';
import { registerCommandRoutes } from './command/command.routes';
import type { IngressServices } from './composition-root';
import { serviceDocument } from './contract';
import { registerEventRoutes } from './events/events.routes';
import { registerHealthRoutes } from './health/health.routes';
import { accessLog } from './http/access-log';
import { securityHeaders } from './http/security-headers';
import { serverSpans } from './http/server-span';
import { registerImportRoutes } from './import/import.routes';
import { recordHttpMetrics } from './metrics/http-metrics';
import { registerPublicMetricsRoutes } from './metrics/public-metrics.routes';
import { DOCS_PATH } from './openapi/openapi.contract';
import { registerOpenApiRoutes, withExampleImportJobId } from './openapi/openapi.routes';
import { allQueries } from './readmodel/queries';
import type { RegisteredQuery } from './readmodel/query-definition';
import { registerReadModelRoutes } from './readmodel/readmodel.routes';

/** Everything the HTTP app needs, built once by main.ts (or by a test) and passed in. */
export interface AppDependencies {
  readonly config: Config;
  readonly logger: Logger;
  /** The `request`-purpose connection: fails fast while Redis is away. */
  readonly redis: RedisClient;
  readonly services: IngressServices;
  /** This process's metrics: recorded by the routes, served at GET /metrics when METRICS_TOKEN is set. */
  readonly metrics: Metrics;
}

export interface BuildAppOptions {
  /**
   * Lets a test add routes (a slow one, one that throws) before the 404 and error handlers; a route
   * that wants a body reads it itself (`jsonBody` of shared/http/request-body), as every route does.
   */
  readonly extraRoutes?: (routes: RouteTable) => void;
  /** Lets a test register queries with roles or schemes the real ones do not combine. */
  readonly extraQueries?: readonly RegisteredQuery[];
}

/** Builds the Express app without listening, so supertest can drive it in-process. */
export function buildApp(deps: AppDependencies, options: BuildAppOptions = {}): Express {
  const app = express();
  app.disable('x-powered-by');
  app.set('etag', false);
  // req.ip (the throttle's client address, the access log's) honours X-Forwarded-For only from
  // the proxies the operator names: believing every hop would let a client pick its own address.
  app.set('trust proxy', deps.config.trustProxy);
  // First, so that the span covers the whole request; with tracing off there is no such middleware.
  if (tracingOn()) app.use(serverSpans());

  // helmet: its defaults on the two HTML pages, the API set (OWASP's REST list) on JSON answers.
  app.use(securityHeaders([DOCS_PATH, BULL_BOARD_PATH]));
  app.use(requestId());
  app.use(recordHttpMetrics(deps.metrics));
  app.use(accessLog(deps.logger));
  // No body is read app-wide: each route reads its own after authentication (the token endpoint,
  // whose body holds the credentials, reads at most 8 KB). An answer sent before the body was read
  // (a 401, a 404) closes the connection in stages, so that the client reads it (ADR 0039).
  app.use(lingerWhenBodyUnread(deps.config.lingeringClose));

  const queries = allQueries({
    redis: deps.redis,
    keys: deps.services.keys,
    importResults: deps.services.importResults,
    accounts: deps.services.accounts,
    usersReader: deps.services.usersReader,
    store: deps.services.store,
    deliveryLog: deps.services.deliveryLog,
    projectionWaits: deps.services.projectionWaits,
  });
  const routes = new RouteTable(app);
  registerHealthRoutes(routes, deps.redis);
  registerPublicMetricsRoutes(routes, { metrics: deps.metrics, token: deps.config.metrics.token });
  registerTokenRoutes(routes, deps.services);
  registerReadModelRoutes(routes, {
    authentication: deps.services.authentication,
    queries: [...queries, ...(options.extraQueries ?? [])],
    modules: deps.config.modules,
    logger: deps.logger,
    bodyLimitBytes: deps.config.bodyLimitBytes,
  });
  registerCommandRoutes(routes, {
    ...deps.services,
    metrics: deps.metrics,
    bodyLimitBytes: deps.config.bodyLimitBytes,
  });
  registerImportRoutes(routes, {
    ...deps.services,
    services: deps.services,
    config: deps.config,
    metrics: deps.metrics,
    logger: deps.logger,
  });
  registerEventRoutes(routes, deps.services);
  registerOpenApiRoutes(
    routes,
    withExampleImportJobId(
      serviceDocument(queries, deps.config.imports.maxRows),
      deps.services.sandboxImportJobId,
    ),
  );
  registerBullBoard(app, { ...deps.services, bodyLimitBytes: deps.config.bodyLimitBytes });
  options.extraRoutes?.(routes);

  app.use(routes.methodNotAllowed());
  app.use(notFound());
  app.use(errorHandler(deps.logger));
  return app;
}
