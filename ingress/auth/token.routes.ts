import express, { type Response } from 'express';
import Joi from 'joi';

import type { Account } from '../../shared/accounts/account';
import type { RouteTable } from '../http/route-table';
import { parseBasicCredentials } from './basic-header';
import type { CredentialVerifier } from './credential-verifier';
import { REALM } from './passport';
import type { TokenService } from './token-service';
import { jsonObjectBody } from '../http/json-body';
import { closedObject, type JsonSchema } from '../openapi/json-schema';

export const OAUTH_ERRORS = [
  'invalid_request',
  'invalid_grant',
  'invalid_client',
  'unsupported_grant_type',
] as const;
type OAuthError = (typeof OAUTH_ERRORS)[number];

function oauthError(res: Response, status: 400 | 401, error: OAuthError, description: string): void {
  if (status === 401) res.setHeader('WWW-Authenticate', `Basic realm="${REALM}"`);
  res.status(status).json({ error, error_description: description });
}

const credential = Joi.string().min(1).max(1024);

/**
 * The body of each grant (JSON or form-encoded). Other members (scope, say) are ignored, as
 * RFC 6749 clients send them. These validate the request and are what the OpenAPI document shows.
 */
export const TOKEN_GRANT_SCHEMAS = {
  password: Joi.object({
    grant_type: Joi.string().valid('password').required(),
    username: credential.required().description("The account's e-mail."),
    password: credential.required(),
  }).unknown(true),
  client_credentials: Joi.object({
    grant_type: Joi.string().valid('client_credentials').required(),
    client_id: credential.description("The account's e-mail, unless sent in a Basic header."),
    client_secret: credential.description("The account's password, unless sent in a Basic header."),
  }).unknown(true),
} as const;

/** The validated members of a grant's body, or none when they are not valid. */
function grantFields(grant: keyof typeof TOKEN_GRANT_SCHEMAS, body: unknown): Record<string, string> | null {
  const result = TOKEN_GRANT_SCHEMAS[grant].validate(body, { convert: false });
  return result.error ? null : (result.value as Record<string, string>);
}

/** What a successful grant answers. */
export const TOKEN_RESPONSE_SCHEMA: JsonSchema = closedObject(
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
export const OAUTH_ERROR_SCHEMA: JsonSchema = closedObject(
  { error: { type: 'string', enum: OAUTH_ERRORS }, error_description: { type: 'string' } },
  [],
  { title: 'OAuthError' },
);

/**
 * POST /api/auth/token, in the style of RFC 6749: `grant_type=password` (username = e-mail, and
 * password) or `grant_type=client_credentials` (the account's credentials in a Basic header, or
 * client_id/client_secret in the body). JSON or form-encoded. Answers are never cached.
 */
export function registerTokenRoutes(
  routes: RouteTable,
  deps: { verifier: CredentialVerifier; tokens: TokenService; bodyLimitBytes: number },
): void {
  routes.add(
    'post',
    '/api/auth/token',
    express.urlencoded({ extended: false, limit: deps.bodyLimitBytes }),
    async (req, res) => {
      res.setHeader('Cache-Control', 'no-store');
      res.setHeader('Pragma', 'no-cache');
      const body = jsonObjectBody(req);
      const address = req.ip ?? 'unknown';
      let account: Account | null;

      switch (body.grant_type) {
        case 'password': {
          const fields = grantFields('password', body);
          if (!fields?.username || !fields.password) {
            oauthError(res, 400, 'invalid_request', 'username and password are required');
            return;
          }
          account = await deps.verifier.verify(fields.username, fields.password, address);
          if (!account) {
            oauthError(res, 400, 'invalid_grant', 'The user name or password is incorrect.');
            return;
          }
          break;
        }
        case 'client_credentials': {
          const fromHeader = parseBasicCredentials(req.headers.authorization);
          const fields = grantFields('client_credentials', body) ?? {};
          const clientId = fromHeader?.userId ?? fields.client_id;
          const secret = fromHeader?.password ?? fields.client_secret;
          account = clientId && secret ? await deps.verifier.verify(clientId, secret, address) : null;
          if (!account) {
            oauthError(res, 401, 'invalid_client', 'Client authentication failed.');
            return;
          }
          break;
        }
        case undefined:
          oauthError(res, 400, 'invalid_request', 'grant_type is required');
          return;
        default:
          oauthError(res, 400, 'unsupported_grant_type', 'grant_type must be password or client_credentials');
          return;
      }
      res.json(deps.tokens.issue(account));
    },
  );
}
