import { METRICS_PATH, METRICS_REALM } from '../../shared/metrics/metrics.routes';
import type { OperationContract } from '../openapi/contract-kit';

/** GET /metrics, on PORT while METRICS_TOKEN is set (METRICS_PORT serves the same answer). */
export const METRICS_CONTRACT: OperationContract = {
  path: METRICS_PATH,
  method: 'get',
  operation: ({ answers }) => ({
    operationId: 'metrics',
    summary: 'Prometheus metrics of the process that answers',
    description:
      'Served on PORT only while METRICS_TOKEN is set (send it as a Bearer token); with METRICS_PORT, on a listener of its own (workers too); otherwise not at all. Not cached.',
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
      '404': answers.problem(404, 'Not served on this port: METRICS_TOKEN is not set.'),
      ...answers.serverFailure(),
    },
  }),
};
