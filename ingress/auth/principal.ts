import type { Request } from 'express';

import type { Account } from '../../shared/accounts/account';

export type AuthenticationScheme = 'Basic' | 'Bearer';

/** The authenticated caller of one request. */
export interface Principal {
  readonly userId: string;
  readonly email: string;
  readonly userName: string;
  readonly userType: Account['userType'];
  readonly roles: readonly string[];
  readonly authenticationType: AuthenticationScheme;
  /**
   * When this account was created. An e-mail registered again after erasure gets the same user id
   * (ADR 0014): what the erased account left under that id (its import records) predates this.
   */
  readonly accountCreatedAt: string;
  /**
   * The account's security stamp when it was authenticated. What the caller starts that outlives
   * the request (an import) is tied to it: a stamp change ends it, as it ends the account's tokens.
   */
  readonly securityStamp: string;
}

declare global {
  // eslint-disable-next-line @typescript-eslint/no-namespace
  namespace Express {
    // passport types req.user as Express.User; ours is always a Principal.
    // eslint-disable-next-line @typescript-eslint/no-empty-object-type
    interface User extends Principal {}
  }
}

export function principalOf(account: Account, authenticationType: AuthenticationScheme): Principal {
  return {
    userId: account.userId,
    email: account.email,
    userName: account.userName,
    userType: account.userType,
    roles: account.roles,
    authenticationType,
    accountCreatedAt: account.createdAt,
    securityStamp: account.securityStamp,
  };
}

/** The caller of a route behind authenticate(); reaching one without it is a wiring bug. */
export function authenticatedPrincipal(req: Request): Principal {
  if (!req.user) throw new Error(`${req.method} ${req.path} reached without an authenticated principal`);
  return req.user;
}
