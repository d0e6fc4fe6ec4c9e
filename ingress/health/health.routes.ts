import type { RedisClient } from '../../shared/redis/connections';

import { serviceUnavailable } from '../../shared/errors';
import type { RouteTable } from '../http/route-table';
import { closedObject, type JsonSchema } from '../openapi/json-schema';

/** What GET /healthz answers. */
export const LIVENESS_SCHEMA: JsonSchema = closedObject({ status: { const: 'ok' } }, [], {
  title: 'Liveness',
});
/** What GET /readyz answers while Redis answers. */
export const READINESS_SCHEMA: JsonSchema = closedObject({ status: { const: 'ready' } }, [], {
  title: 'Readiness',
});

/**
 * /healthz: the process is alive (no dependency checked, so an orchestrator never restarts a
 * healthy process because Redis blinked). /readyz: Redis answers, so traffic may be sent here.
 */
export function registerHealthRoutes(routes: RouteTable, redis: RedisClient): void {
  routes.add('get', '/healthz', (_req, res) => {
    res.json({ status: 'ok' });
  });
  routes.add('get', '/readyz', async (_req, res) => {
    try {
      await redis.ping();
    } catch {
      throw serviceUnavailable('Redis is not reachable.');
    }
    res.json({ status: 'ready' });
  });
}
