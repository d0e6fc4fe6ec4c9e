import express, { type Express } from 'express';
import type { Redis } from 'ioredis';

import type { Config } from '../shared/config';
import type { Logger } from '../shared/logger';
import { registerHealthRoutes } from './health/health.routes';
import { accessLog } from './http/access-log';
import { errorHandler, notFound } from './http/error-handler';
import { requestId } from './http/request-id';
import { RouteTable } from './http/route-table';

/** Everything the HTTP app needs, built once by main.ts (or by a test) and passed in. */
export interface AppDependencies {
  readonly config: Config;
  readonly logger: Logger;
  /** The `request`-purpose connection: fails fast while Redis is away. */
  readonly redis: Redis;
}

export interface BuildAppOptions {
  /** Lets a test add routes (a slow one, one that throws) before the 404 and error handlers. */
  readonly extraRoutes?: (routes: RouteTable) => void;
}

/** Builds the Express app without listening, so supertest can drive it in-process. */
export function buildApp(deps: AppDependencies, options: BuildAppOptions = {}): Express {
  const app = express();
  app.disable('x-powered-by');
  app.set('etag', false);

  app.use(requestId());
  app.use(accessLog(deps.logger));
  app.use(express.json({ limit: deps.config.bodyLimitBytes, strict: true }));

  const routes = new RouteTable(app);
  registerHealthRoutes(routes, deps.redis);
  options.extraRoutes?.(routes);

  app.use(routes.methodNotAllowed());
  app.use(notFound());
  app.use(errorHandler(deps.logger));
  return app;
}
