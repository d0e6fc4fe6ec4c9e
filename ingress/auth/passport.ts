import type { Request } from 'express';
import passport, { type StrategyCreatedStatic } from 'passport';
import { BasicStrategy } from 'passport-http';
import { Strategy as BearerStrategy } from 'passport-http-bearer';

import type { Account } from '../../shared/accounts/account';
import type { AccountCache } from './account-cache';
import type { AccountRateLimit } from './account-rate-limit';
import { CHALLENGES, REALM } from './challenge';
import type { CredentialVerifier } from './credential-verifier';
import { type AuthenticationScheme, type Principal, principalOf } from './principal';
import { type AccessTokenClaims, securityStampOf, type TokenService } from './token-service';

/** The realm of both challenges (challenge.ts defines it). */
export { REALM };

export type PassportAuthenticator = InstanceType<typeof passport.Authenticator>;

/**
 * passport-http's strategy with an RFC 7617 header parser (colons allowed in passwords): the verify
 * function is given the header as it came, and parses it (CredentialVerifier.verifyBasic), so that
 * the header it verified is the header it remembers.
 */
class Rfc7617BasicStrategy extends BasicStrategy {
  constructor(private readonly verifyRequest: BasicVerifyWithRequest) {
    // passport-http's own verify function is never called: authenticate() replaces its parse.
    super({ realm: REALM }, () => {
      throw new Error('passport-http parsed a Basic header: Rfc7617BasicStrategy must parse it');
    });
  }

  override authenticate(req: Request): void {
    // passport adds fail/error/success to the strategy instance it runs.
    const self = this as unknown as StrategyCreatedStatic;
    this.verifyRequest(req, (error, user) => {
      if (error) self.error(error);
      else if (!user) self.fail(CHALLENGES.Basic, 401);
      else self.success(user);
    });
  }
}

type Done = (error: unknown, user?: Express.User | false) => void;

/** A malformed header is refused as wrong credentials are: the same 401 and challenge. */
type BasicVerifyWithRequest = (req: Request, done: Done) => void;

/**
 * How requests are authenticated: passport, with the two schemes the spec names, and a recall of
 * credentials passport has already verified in this process. passport's middleware builds a
 * strategy and its callbacks for every request (its cost: ADR 0005), so credentials it verified
 * once are recalled from the caches its verification filled and admitted as its verify function
 * would admit them: the account read afresh from the account cache, then the per-account rate
 * limit. Credentials not recalled, and every refusal, go through passport.
 */
export interface Authentication {
  readonly passport: PassportAuthenticator;
  /**
   * The principal of a request whose credentials passport verified before, admitted by the rate
   * limit (a rejection is its 429); false when they no longer stand (the account went or was
   * disabled, or its security stamp changed);
   * undefined when passport must authenticate the request: credentials new to this process, a
   * header passport would read differently, or a token also offered outside the header.
   */
  recall(req: Request): Promise<Principal | false> | undefined;
}

/** `Bearer <token>` exactly as passport-http-bearer reads it: two parts split at one blank. */
const BEARER_HEADER = /^Bearer ([^ ]+)$/i;

/**
 * passport-http-bearer also takes a token from the query (and refuses two): its case. It would take
 * one from req.body too, but no body is read before authentication, so a token in the body is never
 * a credential.
 */
function offersTokenOutsideHeader(req: Request): boolean {
  return req.url.includes('?');
}

export function createAuthentication(
  verifier: CredentialVerifier,
  tokens: TokenService,
  accounts: AccountCache,
  rateLimit: AccountRateLimit,
  /** Refused by every scheme, as a disabled account is (refusedSandboxAccounts, ADR 0037). */
  refusedUserIds: ReadonlySet<string> = new Set(),
): Authentication {
  /**
   * Every authenticated request counts against its account's rate limit before it goes on. A
   * disabled account is refused by every scheme: its stamp changed when it was disabled, so its
   * credentials are refused anyway; this says it where admission happens.
   */
  const admit = async (account: Account | null, scheme: AuthenticationScheme): Promise<Principal | false> => {
    if (!account || account.disabled || refusedUserIds.has(account.userId)) return false;
    await rateLimit.consume(account.userId);
    return principalOf(account, scheme);
  };
  // The account is looked up on every request (from a cache every change evicts, so a cached
  // account costs no Redis round trip): roles are current, and a token stands only while its
  // account exists, is enabled, and still has the security stamp the token was issued under.
  const admitBearer = async (claims: AccessTokenClaims) => {
    const account = await accounts.findById(claims.sub);
    return admit(account && account.securityStamp === securityStampOf(claims) ? account : null, 'Bearer');
  };
  const settle = (admitted: Promise<Principal | false>, done: Done) => {
    admitted.then(
      (principal) => done(null, principal),
      (error: unknown) => done(error),
    );
  };

  const authenticator = new passport.Authenticator();
  authenticator.use(
    'basic',
    new Rfc7617BasicStrategy((req, done) => {
      settle(
        verifier
          .verifyBasic(req.headers.authorization, req.ip ?? 'unknown')
          .then((account) => admit(account, 'Basic')),
        done,
      );
    }),
  );
  authenticator.use(
    'bearer',
    new BearerStrategy({ realm: REALM }, (token: string, done: Done) => {
      const claims = tokens.verify(token);
      if (!claims) done(null, false);
      else settle(admitBearer(claims), done);
    }),
  );

  const recall = (req: Request): Promise<Principal | false> | undefined => {
    const header = req.headers.authorization;
    if (header === undefined) return undefined;
    const bearer = BEARER_HEADER.exec(header);
    if (bearer) {
      const claims = offersTokenOutsideHeader(req) ? null : tokens.recall(bearer[1] as string);
      return claims ? admitBearer(claims) : undefined;
    }
    return verifier.recallBasic(header)?.then((recalled) => admit(recalled, 'Basic'));
  };

  return { passport: authenticator, recall };
}
