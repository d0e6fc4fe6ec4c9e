import { AppError } from '../../shared/errors';
import type { RouteTable } from '../../shared/http/route-table';
import type { Metrics } from '../../shared/metrics/metrics';
import { METRICS_PATH, registerMetricsRoutes } from '../../shared/metrics/metrics.routes';

/** Why GET /metrics on PORT answers 404 while no METRICS_TOKEN is set. */
export const METRICS_NOT_SERVED = 'Metrics are not served on this port: METRICS_TOKEN is not set.';

/**
 * GET /metrics on PORT: the metrics behind METRICS_TOKEN when it is set; otherwise a 404 problem
 * that says why. The route exists either way, so the served document, which lists it, is true.
 */
export function registerPublicMetricsRoutes(
  routes: RouteTable,
  deps: { readonly metrics: Metrics; readonly token: string | undefined },
): void {
  if (deps.token !== undefined) {
    registerMetricsRoutes(routes, deps);
    return;
  }
  routes.add('get', METRICS_PATH, () => {
    throw new AppError('NOT_FOUND', METRICS_NOT_SERVED, 404);
  });
}
