import type { BuildAppOptions } from '../../ingress/app';
import { jsonBody } from '../../shared/http/request-body';

/**
 * A test route (`extraRoutes` of createTestApp) that reads its body with the service's JSON reader
 * at `limitBytes` and answers `{ received: <the body as read> }`: what a body becomes, seen from
 * outside.
 */
export function echoJsonBodyRoute(
  path: string,
  limitBytes: number,
): NonNullable<BuildAppOptions['extraRoutes']> {
  return (routes) => {
    routes.add('post', path, jsonBody(limitBytes), (req, res) => {
      res.json({ received: req.body as unknown });
    });
  };
}
