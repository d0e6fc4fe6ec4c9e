import type { RequestHandler } from 'express';

import { AppError } from '../../shared/errors';
import type { RouteTable } from '../../shared/http/route-table';
import { hasAnyRole } from '../../shared/roles';
import { authenticate } from '../auth/authenticate';
import type { Authentication } from '../auth/passport';
import { authenticatedPrincipal } from '../auth/principal';
import { EVENT_STREAM_ROLES } from './event-stream-access';
import { parseEventStreamRequest } from './event-stream-request';
import type { EventStreams } from './event-streams';

/** Where the event stream is served. */
export const EVENTS_PATH = '/api/events';

export interface EventRouteDeps {
  readonly authentication: Authentication;
  readonly eventStreams: EventStreams;
}

/**
 * GET /api/events (Server-Sent Events): authenticate (Bearer or Basic; 401 problem), authorise
 * (Admin or ServiceAccount; 403), validate `types`, `from` and Last-Event-ID (400), then hand
 * the response to the process's event streams (503 past SSE_MAX_CONNECTIONS). Nothing is read
 * from Redis, and no stream slot held, before the caller is known and allowed.
 */
export function registerEventRoutes(routes: RouteTable, deps: EventRouteDeps): void {
  const handle: RequestHandler = async (req, res) => {
    const principal = authenticatedPrincipal(req);
    if (!hasAnyRole(principal.roles, EVENT_STREAM_ROLES)) {
      throw new AppError(
        'FORBIDDEN',
        `The event stream requires one of the roles: ${EVENT_STREAM_ROLES.join(', ')}.`,
        403,
      );
    }
    const request = parseEventStreamRequest(req);
    if (req.method === 'HEAD') {
      // A HEAD has no body to stream: the headers a GET would start with, and done.
      res
        .status(200)
        .type('text/event-stream; charset=utf-8')
        .setHeader('Cache-Control', 'no-cache, no-store, no-transform');
      res.end();
      return;
    }
    await deps.eventStreams.serve(res, request, principal);
  };

  routes.add('get', EVENTS_PATH, authenticate(deps.authentication, 'problem'), handle);
}
