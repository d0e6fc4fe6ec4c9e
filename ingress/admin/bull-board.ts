import { createBullBoard } from '@bull-board/api';
import { BullMQAdapter } from '@bull-board/api/bullMQAdapter';
import { ExpressAdapter } from '@bull-board/express';
import type { Express, RequestHandler } from 'express';

import { AppError } from '../../shared/errors';
import type { ImportQueue } from '../../shared/importers/import-queue';
import { redactSecrets } from '../../shared/redaction';
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
  imports.setFormatter('data', redactSecrets);
  createBullBoard({
    queues: [imports],
    serverAdapter,
    options: { uiConfig: { boardTitle: 'Fantasy team service' } },
  });
  // The adapter's router is an Express app of its own, with Express's defaults.
  const board = serverAdapter.getRouter() as Express;
  board.disable('x-powered-by');
  app.use(BULL_BOARD_PATH, authenticate(deps.authentication, 'problem'), requireAdmin, board);
}
