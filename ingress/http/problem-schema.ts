import { PROBLEM_CODES, type ProblemCode } from '../../shared/errors';
import { PROBLEMS, type ProblemStatus } from '../../shared/http/problem';
import type { JsonSchema } from './json-schema';

/**
 * The JSON Schema of the problem answered with `status`: its type, title and status are fixed by
 * PROBLEMS, so the OpenAPI document and the contract tests hold every problem to this table.
 */
export function problemSchema(status: ProblemStatus): JsonSchema {
  const { type, title } = PROBLEMS[status];
  const codes = (Object.keys(PROBLEM_CODES) as ProblemCode[]).filter(
    (code) => PROBLEM_CODES[code].status === status,
  );
  return {
    title: `Problem${status}`,
    type: 'object',
    properties: {
      type: { const: type },
      title: { const: title },
      status: { const: status },
      detail: { type: 'string', description: 'What went wrong, for a person.' },
      ...(codes.length > 0
        ? {
            code: {
              type: 'string',
              enum: codes,
              description: codes.map((code) => `\`${code}\`: ${PROBLEM_CODES[code].meaning}`).join(' '),
            },
          }
        : {}),
      errors: {
        type: 'object',
        description: 'Field name (PascalCase, `Users[3].Email`; `$` for the body) to its messages.',
        additionalProperties: { type: 'array', items: { type: 'string' } },
      },
      traceId: { type: 'string', description: 'The X-Request-Id of the response, to quote.' },
    },
    required: ['type', 'title', 'status', 'traceId'],
    additionalProperties: false,
  };
}
