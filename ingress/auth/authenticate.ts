import type { RequestHandler } from 'express';

import { currentContext } from '../../shared/request-context';
import { problem, sendProblem } from '../http/problem';
import { REALM, type PassportAuthenticator } from './passport';

/**
 * How an endpoint answers a caller without valid credentials: a 401 problem (read model,
 * command) or a 401 with an empty body (import), as the spec's section 5 says.
 */
export type UnauthenticatedAnswer = 'problem' | 'empty';

export const WWW_AUTHENTICATE = `Basic realm="${REALM}", Bearer realm="${REALM}"`;

/** Authenticates by the scheme the Authorization header names; sets req.user or answers 401. */
export function authenticate(passport: PassportAuthenticator, answer: UnauthenticatedAnswer): RequestHandler {
  return (req, res, next) => {
    const scheme = /^(Basic|Bearer) /i.exec(req.headers.authorization ?? '')?.[1]?.toLowerCase();
    const refuse = () => {
      if (answer === 'empty') {
        res.status(401).end();
        return;
      }
      res.setHeader('WWW-Authenticate', WWW_AUTHENTICATE);
      sendProblem(res, problem(401, req.requestId));
    };
    if (!scheme) {
      refuse();
      return;
    }
    const handler = passport.authenticate(
      scheme,
      { session: false },
      (error: unknown, user: Express.User | false) => {
        if (error) {
          next(error);
          return;
        }
        if (!user) {
          refuse();
          return;
        }
        req.user = user;
        const context = currentContext();
        if (context) context.userId = user.userId;
        next();
      },
    ) as RequestHandler;
    void handler(req, res, next);
  };
}
