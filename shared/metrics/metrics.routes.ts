import { createHash, timingSafeEqual } from 'node:crypto';

import type { RequestHandler } from 'express';

import { AppError } from '../errors';
import type { RouteTable } from '../http/route-table';
import type { Metrics } from './metrics';

/** Where a process serves its metrics (on PORT behind METRICS_TOKEN, or on METRICS_PORT). */
export const METRICS_PATH = '/metrics';

/** The realm of the metrics token: another credential than the API's accounts. */
export const METRICS_REALM = 'metrics';

function digest(text: string): Buffer {
  return createHash('sha256').update(text).digest();
}

/**
 * Compares in constant time: both sides are hashed to one length first, so neither the token's
 * content nor its length shows in the response time.
 */
function bearerTokenMatches(authorization: string | undefined, expected: Buffer): boolean {
  const presented = /^Bearer +(\S+) *$/i.exec(authorization ?? '')?.[1];
  return presented !== undefined && timingSafeEqual(digest(presented), expected);
}

/** Answers 401 unless the request carries `Authorization: Bearer <token>`; no token, no guard. */
function requireMetricsToken(token: string | undefined): RequestHandler {
  if (token === undefined) return (_req, _res, next) => next();
  const expected = digest(token);
  return (req, res, next) => {
    if (bearerTokenMatches(req.headers.authorization, expected)) {
      next();
      return;
    }
    res.setHeader('WWW-Authenticate', `Bearer realm="${METRICS_REALM}"`);
    throw new AppError('UNAUTHORIZED', 'GET /metrics needs the metrics bearer token (METRICS_TOKEN).', 401);
  };
}

/** GET /metrics: the Prometheus text exposition of this process's registry, behind the token if set. */
export function registerMetricsRoutes(
  routes: RouteTable,
  deps: { readonly metrics: Metrics; readonly token: string | undefined },
): void {
  routes.add('get', METRICS_PATH, requireMetricsToken(deps.token), async (_req, res) => {
    const { contentType, text } = await deps.metrics.exposition();
    res.setHeader('Cache-Control', 'no-store');
    res.type(contentType).send(text);
  });
}
