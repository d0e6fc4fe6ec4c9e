import type { NextFunction, Request, RequestHandler, Response } from 'express';

import { currentContext } from '../../shared/request-context';
import { problem, sendProblem } from '../http/problem';
import { REALM, type PassportAuthenticator } from './passport';

/**
 * How an endpoint answers a caller without valid credentials: a 401 problem (read model,
 * command) or a 401 with an empty body (import), as the spec's section 5 says.
 */
export type UnauthenticatedAnswer = 'problem' | 'empty';

export const WWW_AUTHENTICATE = `Basic realm="${REALM}", Bearer realm="${REALM}"`;

/** passport's error for refused credentials (with `failWithError`). */
function isAuthenticationError(error: unknown): boolean {
  return error instanceof Error && error.name === 'AuthenticationError';
}

/**
 * Authenticates by the scheme the Authorization header names; sets req.user or answers 401.
 * Each scheme's passport middleware is built once, not per request.
 */
export function authenticate(passport: PassportAuthenticator, answer: UnauthenticatedAnswer): RequestHandler {
  const byScheme: Record<string, RequestHandler> = {
    basic: passport.authenticate('basic', { session: false, failWithError: true }) as RequestHandler,
    bearer: passport.authenticate('bearer', { session: false, failWithError: true }) as RequestHandler,
  };

  const refuse = (req: Request, res: Response) => {
    if (answer === 'empty') {
      res.status(401).end();
      return;
    }
    res.setHeader('WWW-Authenticate', WWW_AUTHENTICATE);
    sendProblem(res, problem(401, req.requestId));
  };

  return (req: Request, res: Response, next: NextFunction) => {
    const scheme = /^(Basic|Bearer) /i.exec(req.headers.authorization ?? '')?.[1]?.toLowerCase();
    const middleware = scheme ? byScheme[scheme] : undefined;
    if (!middleware) {
      refuse(req, res);
      return;
    }
    void middleware(req, res, (error?: unknown) => {
      if (isAuthenticationError(error) || (!error && !req.user)) {
        res.removeHeader('WWW-Authenticate');
        refuse(req, res);
        return;
      }
      if (error) {
        next(error);
        return;
      }
      const context = currentContext();
      if (context && req.user) context.userId = req.user.userId;
      next();
    });
  };
}
