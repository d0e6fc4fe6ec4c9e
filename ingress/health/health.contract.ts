import { closedObject } from '../http/json-schema';
import { type OperationContract, PUBLIC } from '../openapi/contract-kit';
import { LIVENESS_PATH, READINESS_PATH } from './health.routes';

/** GET /healthz. */
export const LIVENESS_CONTRACT: OperationContract = {
  path: LIVENESS_PATH,
  method: 'get',
  operation: ({ component, answers }) => ({
    operationId: 'liveness',
    summary: 'Liveness: the process is up (no dependency checked)',
    tags: ['Operations'],
    security: PUBLIC,
    responses: {
      '200': answers.json('Alive.', component('Liveness', closedObject({ status: { const: 'ok' } }))),
      ...answers.serverFailure(),
    },
  }),
};

/** GET /readyz. */
export const READINESS_CONTRACT: OperationContract = {
  path: READINESS_PATH,
  method: 'get',
  operation: ({ component, answers }) => ({
    operationId: 'readiness',
    summary: 'Readiness: Redis answers, send traffic here',
    tags: ['Operations'],
    security: PUBLIC,
    responses: {
      '200': answers.json('Ready.', component('Readiness', closedObject({ status: { const: 'ready' } }))),
      ...answers.serverFailure(),
      '503': answers.problem(503, 'Redis is not reachable (Retry-After: 1).'),
    },
  }),
};
