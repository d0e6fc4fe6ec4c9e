import type { NextFunction, Request, RequestHandler, Response } from 'express';

import { problem, sendProblem } from '../../shared/http/problem';
import { currentContext } from '../../shared/request-context';
import { challengeFor } from './challenge';
import type { Authentication } from './passport';
import type { Principal } from './principal';

/**
 * How an endpoint answers a caller without valid credentials: a 401 problem (read model,
 * command) or a 401 with an empty body (import), as the spec's section 5 says.
 */
export type UnauthenticatedAnswer = 'problem' | 'empty';

export const WWW_AUTHENTICATE = challengeFor(['Basic', 'Bearer']);

/** passport's error for refused credentials (with `failWithError`). */
function isAuthenticationError(error: unknown): boolean {
  return error instanceof Error && error.name === 'AuthenticationError';
}

/**
 * Authenticates by the scheme the Authorization header names; sets req.user or answers 401.
 * Credentials passport verified before are recalled (see {@link Authentication}); the rest go
 * through passport, whose middleware for each scheme is built once, not per request.
 */
export function authenticate(authentication: Authentication, answer: UnauthenticatedAnswer): RequestHandler {
  const { passport } = authentication;
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

  const proceedAs = (principal: Principal, req: Request, next: NextFunction) => {
    req.user = principal;
    const context = currentContext();
    if (context) context.userId = principal.userId;
    next();
  };

  const throughPassport = (req: Request, res: Response, next: NextFunction) => {
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
      if (error) next(error);
      else proceedAs(req.user as Principal, req, next);
    });
  };

  return (req: Request, res: Response, next: NextFunction) => {
    const recalled = authentication.recall(req);
    if (!recalled) {
      throughPassport(req, res, next);
      return;
    }
    recalled.then((principal) => {
      // Credentials that no longer stand are passport's to refuse (or to verify afresh).
      if (principal) proceedAs(principal, req, next);
      else throughPassport(req, res, next);
    }, next);
  };
}
