import express, { type Express } from 'express';
import type { Redis } from 'ioredis';

import type { Config } from '../shared/config';
import type { Logger } from '../shared/logger';
import { registerBullBoard } from './admin/bull-board';
import { registerTokenRoutes } from './auth/token.routes';
import { registerCommandRoutes } from './command/command.routes';
import { registerImportRoutes } from './import/import.routes';
import { registerHealthRoutes } from './health/health.routes';
import { accessLog } from './http/access-log';
import { errorHandler, notFound } from './http/error-handler';
import { requestId } from './http/request-id';
import { RouteTable } from './http/route-table';
import { allQueries } from './readmodel/queries';
import type { RegisteredQuery } from './readmodel/query-definition';
import { registerReadModelRoutes } from './readmodel/readmodel.routes';
import type { IngressServices } from './services';

/** Everything the HTTP app needs, built once by main.ts (or by a test) and passed in. */
export interface AppDependencies {
  readonly config: Config;
  readonly logger: Logger;
  /** The `request`-purpose connection: fails fast while Redis is away. */
  readonly redis: Redis;
  readonly services: IngressServices;
}

export interface BuildAppOptions {
  /** Lets a test add routes (a slow one, one that throws) before the 404 and error handlers. */
  readonly extraRoutes?: (routes: RouteTable) => void;
  /** Lets a test register queries with roles or schemes the real ones do not combine. */
  readonly extraQueries?: readonly RegisteredQuery[];
}

/** Builds the Express app without listening, so supertest can drive it in-process. */
export function buildApp(deps: AppDependencies, options: BuildAppOptions = {}): Express {
  const app = express();
  app.disable('x-powered-by');
  app.set('etag', false);

  app.use(requestId());
  app.use(accessLog(deps.logger));
  // Imports first, with their own larger limit; the general parser then skips a parsed body.
  app.use('/api/import', express.json({ limit: deps.config.importBodyLimitBytes, strict: true }));
  app.use(express.json({ limit: deps.config.bodyLimitBytes, strict: true }));

  const routes = new RouteTable(app);
  registerHealthRoutes(routes, deps.redis);
  registerTokenRoutes(routes, { ...deps.services, bodyLimitBytes: deps.config.bodyLimitBytes });
  registerReadModelRoutes(routes, {
    passport: deps.services.passport,
    queries: [
      ...allQueries({
        redis: deps.redis,
        keys: deps.services.keys,
        importResults: deps.services.importResults,
      }),
      ...(options.extraQueries ?? []),
    ],
    modules: deps.config.modules,
    logger: deps.logger,
  });
  registerCommandRoutes(routes, deps.services);
  registerImportRoutes(routes, { ...deps.services, services: deps.services, config: deps.config });
  registerBullBoard(app, deps.services);
  options.extraRoutes?.(routes);

  app.use(routes.methodNotAllowed());
  app.use(notFound());
  app.use(errorHandler(deps.logger));
  return app;
}
