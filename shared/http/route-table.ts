import type { Express, RequestHandler } from 'express';

import { problem, sendProblem } from './problem';

type Method = 'get' | 'post';

/**
 * Registers routes and remembers which methods each path accepts, so a known path called with
 * another method answers 405 with an Allow header instead of a misleading 404.
 */
export class RouteTable {
  private readonly allowed = new Map<string, Set<string>>();

  constructor(private readonly app: Express) {}

  add(method: Method, path: string, ...handlers: RequestHandler[]): this {
    this.app[method](path, ...handlers);
    const methods = this.allowed.get(path) ?? new Set<string>();
    methods.add(method.toUpperCase());
    if (method === 'get') methods.add('HEAD');
    this.allowed.set(path, methods);
    return this;
  }

  /** Every registered path and its methods (HEAD wherever GET is), e.g. to hold them to the OpenAPI document. */
  registered(): ReadonlyMap<string, ReadonlySet<string>> {
    return this.allowed;
  }

  methodNotAllowed(): RequestHandler {
    return (req, res, next) => {
      const methods = this.allowed.get(req.path);
      if (!methods) {
        next();
        return;
      }
      res.setHeader('Allow', [...methods].join(', '));
      sendProblem(
        res,
        problem(405, req.requestId, { detail: `${req.method} is not allowed on ${req.path}.` }),
      );
    };
  }
}
