import { closedObject, type JsonSchema } from '../http/json-schema';
import {
  discriminatedOneOf,
  JSON_MEDIA,
  type Operation,
  type OperationContract,
  requestBody,
} from '../openapi/contract-kit';
import { joiToJsonSchema } from '../openapi/joi-to-json-schema';
import { SANDBOX_ADMIN_EMAIL } from './sandbox-admin';
import { OAUTH_ERRORS, TOKEN_GRANT_SCHEMAS, TOKEN_PATH } from './token.routes';

/** What a successful grant answers. */
const TOKEN_RESPONSE_SCHEMA: JsonSchema = closedObject(
  {
    access_token: {
      type: 'string',
      description: 'A JWT (HS256); send it as `Authorization: Bearer <token>`.',
    },
    token_type: { const: 'Bearer' },
    expires_in: { type: 'integer', minimum: 1, description: 'Seconds until it expires (JWT_TTL_SECONDS).' },
  },
  [],
  { title: 'TokenResponse' },
);

/** What a refused grant answers (RFC 6749 section 5.2). */
const OAUTH_ERROR_SCHEMA: JsonSchema = closedObject(
  { error: { type: 'string', enum: OAUTH_ERRORS }, error_description: { type: 'string' } },
  [],
  { title: 'OAuthError' },
);

/** POST /api/auth/token. */
export const TOKEN_CONTRACT: OperationContract = {
  path: TOKEN_PATH,
  method: 'post',
  operation({ component, answers }): Operation {
    const grants = Object.entries(TOKEN_GRANT_SCHEMAS).map(([grant, schema]) => ({
      value: grant,
      ref: component(
        grant === 'password' ? 'PasswordGrant' : 'ClientCredentialsGrant',
        joiToJsonSchema(schema),
      ),
    }));
    const oauthError = component('OAuthError', OAUTH_ERROR_SCHEMA);
    return {
      operationId: 'issueToken',
      summary: 'Issue a bearer token (RFC 6749 style)',
      description:
        'grant_type `password` (username = e-mail) or `client_credentials` (credentials in a Basic header, or client_id and client_secret, never both: RFC 6749 section 2.3). JSON or form-encoded, at most 8 KB. Answers are never cached.',
      tags: ['Authentication'],
      // No authentication needed; client_credentials may send its credentials as Basic.
      security: [{}, { basicAuth: [] }],
      requestBody: requestBody(
        'A grant.',
        discriminatedOneOf('grant_type', grants),
        [
          {
            name: 'PasswordGrant',
            summary: 'Password grant',
            // The sandbox's administrator: its password is the one its first start printed.
            value: {
              grant_type: 'password',
              username: SANDBOX_ADMIN_EMAIL,
              password: 'the-password-npm-start-printed',
            },
          },
        ],
        [JSON_MEDIA, 'application/x-www-form-urlencoded'],
      ),
      responses: {
        '200': answers.json('A token.', component('TokenResponse', TOKEN_RESPONSE_SCHEMA)),
        '400': answers.jsonOrProblem(
          400,
          'invalid_request (a member missing or malformed, or client credentials both in a Basic header and in the body), invalid_grant (wrong e-mail or password) or unsupported_grant_type; a body that is not JSON (or nested deeper than 64 levels, or in an encoding not accepted) gets the 400 problem.',
          oauthError,
        ),
        '401': answers.json('invalid_client: the client credentials are wrong.', oauthError),
        ...answers.common({ authenticated: true }),
      },
    };
  },
};
