import type { Answers, Operation, ResponseObject } from '../openapi/contract-kit';
import type { SecuritySchemeName } from '../openapi/openapi-document';
import type { SpecExample } from '../openapi/spec-examples';
import { challengeFor } from './challenge';
import type { AuthenticationScheme } from './principal';

/** How the document names each scheme `authenticate` accepts. */
const SCHEME_NAMES: Readonly<Record<AuthenticationScheme, SecuritySchemeName>> = {
  Basic: 'basicAuth',
  Bearer: 'bearerAuth',
};

/** An operation's `security`: any one of these schemes. */
export function securityOf(schemes: readonly AuthenticationScheme[]): Operation['security'] {
  return schemes.map((scheme) => ({ [SCHEME_NAMES[scheme]]: [] }));
}

export const BASIC_OR_BEARER = securityOf(['Basic', 'Bearer']);

/** The 401 of an endpoint behind `authenticate`, with the challenge it sends. */
export function unauthorizedAnswer(answers: Answers, examples?: readonly SpecExample[]): ResponseObject {
  return {
    ...answers.problem(
      401,
      'Not authenticated, or by a scheme the query or command does not accept.',
      examples,
    ),
    headers: {
      'WWW-Authenticate': {
        schema: { type: 'string' },
        description: `The accepted schemes, such as \`${challengeFor(['Basic', 'Bearer'])}\`.`,
      },
    },
  };
}
