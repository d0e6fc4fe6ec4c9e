import type { Redis } from 'ioredis';

import { serviceUnavailable } from '../../shared/errors';
import type { RouteTable } from '../http/route-table';

/**
 * /healthz: the process is alive (no dependency checked, so an orchestrator never restarts a
 * healthy process because Redis blinked). /readyz: Redis answers, so traffic may be sent here.
 */
export function registerHealthRoutes(routes: RouteTable, redis: Redis): void {
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
