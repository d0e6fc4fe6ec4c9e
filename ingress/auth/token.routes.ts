import express, { type Response } from 'express';

import type { Account } from '../../shared/accounts/account';
import type { RouteTable } from '../http/route-table';
import { parseBasicCredentials } from './basic-header';
import type { CredentialVerifier } from './credential-verifier';
import { REALM } from './passport';
import type { TokenService } from './token-service';
import { jsonObjectBody } from '../http/json-body';

type OAuthError = 'invalid_request' | 'invalid_grant' | 'invalid_client' | 'unsupported_grant_type';

function oauthError(res: Response, status: 400 | 401, error: OAuthError, description: string): void {
  if (status === 401) res.setHeader('WWW-Authenticate', `Basic realm="${REALM}"`);
  res.status(status).json({ error, error_description: description });
}

function text(value: unknown): string | undefined {
  return typeof value === 'string' && value.length > 0 && value.length <= 1024 ? value : undefined;
}

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
          const username = text(body.username);
          const password = text(body.password);
          if (!username || !password) {
            oauthError(res, 400, 'invalid_request', 'username and password are required');
            return;
          }
          account = await deps.verifier.verify(username, password, address);
          if (!account) {
            oauthError(res, 400, 'invalid_grant', 'The user name or password is incorrect.');
            return;
          }
          break;
        }
        case 'client_credentials': {
          const fromHeader = parseBasicCredentials(req.headers.authorization);
          const clientId = fromHeader?.userId ?? text(body.client_id);
          const secret = fromHeader?.password ?? text(body.client_secret);
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
