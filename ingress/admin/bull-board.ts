import { createBullBoard } from '@bull-board/api';
import { BullMQAdapter } from '@bull-board/api/bullMQAdapter';
import { appRoutes } from '@bull-board/api/dist/routes.js';
import { ExpressAdapter } from '@bull-board/express';
import type { Express, RequestHandler } from 'express';

import { AppError } from '../../shared/errors';
import { problem, sendProblem } from '../../shared/http/problem';
import { jsonBody } from '../../shared/http/request-body';
import {
  type ImportQueue,
  jobDataForDisplay,
  type QueuedImportJob,
} from '../../shared/importers/import-queue';
import type { JobDataCipher } from '../../shared/importers/job-data-cipher';
import { hasAnyRole, type Role } from '../../shared/roles';
import { authenticate } from '../auth/authenticate';
import type { Authentication } from '../auth/passport';
import { authenticatedPrincipal } from '../auth/principal';

/** Where the dashboard is served. */
export const BULL_BOARD_PATH = '/admin/queues';

export const BULL_BOARD_ROLES: readonly Role[] = ['Admin'];

export interface BullBoardDeps {
  readonly authentication: Authentication;
  readonly importQueue: ImportQueue;
  readonly jobCipher: JobDataCipher;
  readonly bodyLimitBytes: number;
}

const requireAdmin: RequestHandler = (req, _res, next) => {
  const principal = authenticatedPrincipal(req);
  if (!hasAnyRole(principal.roles, BULL_BOARD_ROLES)) {
    throw new AppError(
      'FORBIDDEN',
      `The queue dashboard requires the role ${BULL_BOARD_ROLES.join(', ')}.`,
      403,
    );
  }
  next();
};

/** A route of the board (relative to its mount) and the methods it answers. */
interface BoardRoute {
  readonly path: RegExp;
  readonly methods: readonly string[];
}

/**
 * `/api/queues/:queueName/retry/:queueStatus` -> a pattern matching such paths as Express does
 * (case-insensitive, an optional trailing slash); `*` ends in any rest (the static assets).
 */
function routePattern(route: string): RegExp {
  const source = route
    .split('/')
    .map((segment) => {
      if (segment.startsWith(':')) return '[^/]+';
      if (segment === '*') return '.*';
      return segment.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
    })
    .join('/');
  return new RegExp(`^${source.replace(/\/$/, '')}/?$`, 'i');
}

function boardRoute(routes: string | readonly string[], methods: string | readonly string[]): BoardRoute[] {
  const upper = (Array.isArray(methods) ? methods : [methods]).map((method: string) => method.toUpperCase());
  // HEAD works wherever GET does (Express answers it from the GET route).
  const withHead = upper.includes('GET') ? [...upper, 'HEAD'] : upper;
  return (Array.isArray(routes) ? routes : [routes]).map((route: string) => ({
    path: routePattern(route),
    methods: withHead,
  }));
}

/**
 * Every route the board serves, with its methods: its pages (GET), its assets (GET, under
 * `/static/`), and its own API as @bull-board/api declares it (GET, and the PUT/POST/PATCH of its
 * actions, which the read-only queue refuses itself with its own 405).
 */
const BOARD_ROUTES: readonly BoardRoute[] = [
  ...boardRoute(appRoutes.entryPoint.route, appRoutes.entryPoint.method),
  ...boardRoute('/static/*', 'get'),
  ...appRoutes.api.flatMap((route) => boardRoute(route.route, route.method)),
];

/**
 * A board path called with a method it does not answer gets the 405 problem with Allow, as every
 * other route of the service (the board's Express app would fall through to the 404 "No endpoint",
 * and answer OPTIONS with a 200 text/plain list). Paths the board does not know go on to the 404.
 */
const boardMethodNotAllowed: RequestHandler = (req, res, next) => {
  const allowed = new Set(
    BOARD_ROUTES.filter((route) => route.path.test(req.path)).flatMap((r) => r.methods),
  );
  if (allowed.size === 0 || allowed.has(req.method)) {
    next();
    return;
  }
  const path = `${req.baseUrl}${req.path === '/' ? '' : req.path}`;
  res.setHeader('Allow', [...allowed].join(', '));
  sendProblem(res, problem(405, req.requestId, { detail: `${req.method} is not allowed on ${path}.` }));
};

/**
 * Mounts the Bull Board dashboard of the import queue at `/admin/queues`, for Admins (Basic or
 * Bearer; a browser prompts for Basic). Read-only: an import's record, not its BullMQ job, is what
 * callers see, so adding, removing or emptying jobs from the board would leave records that never
 * finish.
 */
export function registerBullBoard(app: Express, deps: BullBoardDeps): void {
  const serverAdapter = new ExpressAdapter();
  serverAdapter.setBasePath(BULL_BOARD_PATH);
  const imports = new BullMQAdapter(deps.importQueue.queue, {
    readOnlyMode: true,
    displayName: 'Imports',
    description: 'POST /api/import jobs (status and results: GetImportJobResult)',
  });
  imports.setFormatter('data', (data: QueuedImportJob) => jobDataForDisplay(data, deps.jobCipher));
  createBullBoard({
    queues: [imports],
    serverAdapter,
    options: { uiConfig: { boardTitle: 'Fantasy team service' } },
  });
  // The adapter's router is an Express app of its own, with Express's defaults.
  const board = serverAdapter.getRouter() as Express;
  board.disable('x-powered-by');
  // The method first, as on every other route: a method no board route serves is a 405 for
  // anyone, before credentials are looked at. Its own JSON parser then finds the body read, by
  // ours (depth-checked), after authentication.
  app.use(
    BULL_BOARD_PATH,
    boardMethodNotAllowed,
    authenticate(deps.authentication, 'problem'),
    requireAdmin,
    jsonBody(deps.bodyLimitBytes),
    board,
  );
}
