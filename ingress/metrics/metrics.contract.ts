import { METRICS_PATH, METRICS_REALM } from '../../shared/metrics/metrics.routes';
import type { OperationContract } from '../openapi/contract-kit';
import { METRICS_NOT_SERVED } from './public-metrics.routes';

/** GET /metrics on PORT: the metrics while METRICS_TOKEN is set, else 404 (METRICS_PORT serves the same 200). */
export const METRICS_CONTRACT: OperationContract = {
  path: METRICS_PATH,
  method: 'get',
  operation: ({ answers }) => ({
    operationId: 'metrics',
    summary: 'Prometheus metrics of the process that answers',
    description:
      'Served on PORT only while METRICS_TOKEN is set (send it as a Bearer token); without it, PORT answers 404 with the reason. With METRICS_PORT, served on a listener of its own (workers too). Not cached.',
    tags: ['Operations'],
    security: [{ metricsToken: [] }],
    responses: {
      '200': answers.text('The Prometheus text exposition (prom-client, names prefixed fts_).', 'text/plain'),
      '401': {
        ...answers.problem(401, 'METRICS_TOKEN is set and was not sent, or another token was.'),
        headers: {
          'WWW-Authenticate': { schema: { type: 'string' }, description: `Bearer realm="${METRICS_REALM}".` },
        },
      },
      '404': answers.problem(404, `METRICS_TOKEN is not set (the detail says so: "${METRICS_NOT_SERVED}").`),
      ...answers.serverFailure(),
    },
  }),
};
