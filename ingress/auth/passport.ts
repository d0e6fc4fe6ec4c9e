import type { Request } from 'express';
import passport, { type StrategyCreatedStatic } from 'passport';
import { BasicStrategy } from 'passport-http';
import { Strategy as BearerStrategy } from 'passport-http-bearer';

import type { AccountCache } from '../../shared/accounts/account-cache';
import type { AccountRateLimit } from './account-rate-limit';
import { parseBasicCredentials } from './basic-header';
import type { CredentialVerifier } from './credential-verifier';
import { principalOf } from './principal';
import type { TokenService } from './token-service';

export const REALM = 'fantasy-team-service';

export type PassportAuthenticator = InstanceType<typeof passport.Authenticator>;

/** passport-http's strategy with an RFC 7617 header parser (colons allowed in passwords). */
class Rfc7617BasicStrategy extends BasicStrategy {
  override authenticate(req: Request): void {
    // passport adds fail/error/success to the strategy instance it runs.
    const self = this as unknown as StrategyCreatedStatic & { _verify: BasicVerifyWithRequest };
    const credentials = parseBasicCredentials(req.headers.authorization);
    if (!credentials) {
      self.fail(`Basic realm="${REALM}"`, 401);
      return;
    }
    self._verify(req, credentials.userId, credentials.password, (error, user) => {
      if (error) self.error(error);
      else if (!user) self.fail(`Basic realm="${REALM}"`, 401);
      else self.success(user);
    });
  }
}

type Done = (error: unknown, user?: Express.User | false) => void;

type BasicVerifyWithRequest = (req: Request, userId: string, password: string, done: Done) => void;

/**
 * A passport instance of our own (not the global singleton), with the two schemes the spec names:
 * Basic (e-mail and password) and Bearer (a JWT from /api/auth/token).
 */
export function createPassport(
  verifier: CredentialVerifier,
  tokens: TokenService,
  accounts: AccountCache,
  rateLimit: AccountRateLimit,
): PassportAuthenticator {
  const authenticator = new passport.Authenticator();
  /** Every authenticated request counts against its account's rate limit before it goes on. */
  const admit = (principal: Express.User | false, done: Done) => {
    if (!principal) {
      done(null, false);
      return;
    }
    rateLimit.consume(principal.userId).then(
      () => done(null, principal),
      (error: unknown) => done(error),
    );
  };

  authenticator.use(
    'basic',
    new Rfc7617BasicStrategy({ realm: REALM, passReqToCallback: true }, ((req, email, password, done) => {
      verifier.verify(email, password, req.ip ?? 'unknown').then(
        (account) => admit(account ? principalOf(account, 'Basic') : false, done),
        (error: unknown) => done(error),
      );
    }) as BasicVerifyWithRequest),
  );

  authenticator.use(
    'bearer',
    new BearerStrategy({ realm: REALM }, (token: string, done: Done) => {
      const claims = tokens.verify(token);
      if (!claims) {
        done(null, false);
        return;
      }
      // The account is looked up on every request (from a cache every change evicts): roles are
      // current and a removed account is refused.
      accounts.findById(claims.sub).then(
        (account) => admit(account ? principalOf(account, 'Bearer') : false, done),
        (error: unknown) => done(error),
      );
    }),
  );
  return authenticator;
}
