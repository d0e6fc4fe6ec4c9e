import { serviceUnavailable } from '../../shared/errors';
import type { RouteTable } from '../../shared/http/route-table';
import type { RedisClient } from '../../shared/redis/connections';

/** The probes' paths. */
export const LIVENESS_PATH = '/healthz';
export const READINESS_PATH = '/readyz';

/**
 * /healthz: the process is alive (no dependency checked, so an orchestrator never restarts a
 * healthy process because Redis blinked). /readyz: Redis answers, so traffic may be sent here.
 */
export function registerHealthRoutes(routes: RouteTable, redis: RedisClient): void {
  routes.add('get', LIVENESS_PATH, (_req, res) => {
    res.json({ status: 'ok' });
  });
  routes.add('get', READINESS_PATH, async (_req, res) => {
    try {
      await redis.ping();
    } catch {
      throw serviceUnavailable('Redis is not reachable.');
    }
    res.json({ status: 'ready' });
  });
}
