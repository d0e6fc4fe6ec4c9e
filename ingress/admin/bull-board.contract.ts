import { BASIC_OR_BEARER, unauthorizedAnswer } from '../auth/authentication.contract';
import type { OperationContract } from '../openapi/contract-kit';
import { BULL_BOARD_PATH, BULL_BOARD_ROLES } from './bull-board';

/** GET /admin/queues: the page only; its assets and API are not part of the contract. */
export const BULL_BOARD_CONTRACT: OperationContract = {
  path: BULL_BOARD_PATH,
  method: 'get',
  operation: ({ answers }) => ({
    operationId: 'queueDashboard',
    summary: 'The import queue dashboard (Bull Board, read-only)',
    description:
      'A browser page; its assets and API live under the same path and are not part of this contract.',
    tags: ['Operations'],
    security: BASIC_OR_BEARER,
    'x-roles': BULL_BOARD_ROLES,
    responses: {
      '200': answers.text('The dashboard page.', 'text/html'),
      '401': unauthorizedAnswer(answers),
      '403': answers.problem(403, 'The account lacks the role Admin.'),
      '429': answers.problem(429, 'Too many failed sign-ins; see Retry-After.'),
      ...answers.serverFailure(),
      '503': answers.problem(
        503,
        'Redis is not reachable, or too many passwords are being checked at once; see Retry-After.',
      ),
    },
  }),
};
