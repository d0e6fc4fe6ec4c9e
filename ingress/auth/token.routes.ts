import type { Response } from 'express';
import Joi from 'joi';

import type { Account } from '../../shared/accounts/account';
import { tokenRequestBody } from '../../shared/http/request-body';
import type { RouteTable } from '../../shared/http/route-table';
import { text, VALIDATION_MESSAGES } from '../../shared/validation';
import { jsonObjectBody } from '../http/json-body';
import { parseBasicCredentials } from './basic-header';
import { CHALLENGES } from './challenge';
import type { CredentialVerifier } from './credential-verifier';
import type { TokenService } from './token-service';

/** Where tokens are issued. */
export const TOKEN_PATH = '/api/auth/token';

export const OAUTH_ERRORS = [
  'invalid_request',
  'invalid_grant',
  'invalid_client',
  'unsupported_grant_type',
] as const;
type OAuthError = (typeof OAUTH_ERRORS)[number];

function oauthError(res: Response, status: 400 | 401, error: OAuthError, description: string): void {
  if (status === 401) res.setHeader('WWW-Authenticate', CHALLENGES.Basic);
  res.status(status).json({ error, error_description: description });
}

const credential = text({ min: 1, max: 1024 });

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
    client_id: credential.description(
      "The account's e-mail, when no Basic header is sent (with one: 400 invalid_request).",
    ),
    client_secret: credential.description(
      "The account's password, when no Basic header is sent (with one: 400 invalid_request).",
    ),
  }).unknown(true),
} as const;

/** Refusals that mean "a credential is missing", answered with the one description that says so. */
const MISSING = new Set(['any.required', 'string.empty']);

/**
 * The validated members of a grant's body, or what is wrong with them: a missing credential, or
 * one that is not a single string of 1-1024 well-formed characters (an array from a repeated
 * form field `username=a&username=b`, a lone surrogate that no account's e-mail can hold).
 */
function grantFields(
  grant: keyof typeof TOKEN_GRANT_SCHEMAS,
  body: unknown,
): { fields: Record<string, string> } | { missing: boolean; problem: string } {
  const result = PREPARED_GRANT_SCHEMAS[grant].validate(body);
  if (!result.error) return { fields: result.value as Record<string, string> };
  const [detail] = result.error.details;
  return { missing: MISSING.has(detail?.type ?? ''), problem: detail?.message ?? result.error.message };
}

/**
 * With the other request schemas' messages, without conversion (a credential is taken as sent);
 * prepared once, as joi compiles message templates per preference object.
 */
const PREPARED_GRANT_SCHEMAS = {
  password: TOKEN_GRANT_SCHEMAS.password.prefs(grantPreferences()),
  client_credentials: TOKEN_GRANT_SCHEMAS.client_credentials.prefs(grantPreferences()),
};

function grantPreferences(): Joi.ValidationOptions {
  return {
    convert: false,
    abortEarly: true,
    errors: { wrap: { label: false } },
    messages: VALIDATION_MESSAGES,
  };
}

export const TWO_CLIENT_AUTHENTICATIONS =
  'Send the client credentials once: in the Basic header or as client_id and client_secret in the body, not both.';

/**
 * RFC 6749 section 2.3: a client uses one authentication method per request. A Basic header (well
 * formed or not) together with client_id or client_secret in the body, whatever their values, is
 * two: refused as a malformed request, never resolved by preferring one of them.
 */
function twoClientAuthentications(authorization: string | undefined, body: Record<string, unknown>): boolean {
  const basic = authorization !== undefined && /^Basic(\s|$)/i.test(authorization);
  return basic && (Object.hasOwn(body, 'client_id') || Object.hasOwn(body, 'client_secret'));
}

/**
 * POST /api/auth/token, in the style of RFC 6749: `grant_type=password` (username = e-mail, and
 * password) or `grant_type=client_credentials` (the account's credentials in a Basic header, or
 * client_id/client_secret in the body, never both). JSON or form-encoded, at most 8 KB (TOKEN_BODY_LIMIT_BYTES).
 * Answers are never cached. A disabled account gets what a wrong password gets, right password or
 * not (the verifier refuses it and counts the attempt as a failure), and a token carries its
 * account's security stamp, so it dies with the account's next security change.
 */
export function registerTokenRoutes(
  routes: RouteTable,
  deps: { verifier: CredentialVerifier; tokens: TokenService },
): void {
  routes.add(
    'post',
    TOKEN_PATH,
    // The one body read before anyone is known: credentials, so a few kilobytes at most.
    tokenRequestBody(),
    async (req, res) => {
      res.setHeader('Cache-Control', 'no-store');
      res.setHeader('Pragma', 'no-cache');
      const body = jsonObjectBody(req);
      const address = req.ip ?? 'unknown';
      let account: Account | null;

      switch (body.grant_type) {
        case 'password': {
          const checked = grantFields('password', body);
          if (!('fields' in checked)) {
            const description = checked.missing ? 'username and password are required' : checked.problem;
            oauthError(res, 400, 'invalid_request', description);
            return;
          }
          const { username, password } = checked.fields as { username: string; password: string };
          account = await deps.verifier.verify(username, password, address);
          if (!account) {
            oauthError(res, 400, 'invalid_grant', 'The user name or password is incorrect.');
            return;
          }
          break;
        }
        case 'client_credentials': {
          // Before any credential is checked, so such a request costs no hashing.
          if (twoClientAuthentications(req.headers.authorization, body)) {
            oauthError(res, 400, 'invalid_request', TWO_CLIENT_AUTHENTICATIONS);
            return;
          }
          const fromHeader = parseBasicCredentials(req.headers.authorization);
          // Any fault in the body (an array, a lone surrogate) is a failed client authentication.
          const checked = grantFields('client_credentials', body);
          const fields = 'fields' in checked ? checked.fields : {};
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
