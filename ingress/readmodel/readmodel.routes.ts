import type { RequestHandler } from 'express';

import type { ModuleName } from '../../shared/config';
import { AppError, validationError } from '../../shared/errors';
import { sendJsonText } from '../../shared/http/json-answer';
import { jsonBody } from '../../shared/http/request-body';
import type { RouteTable } from '../../shared/http/route-table';
import type { Logger } from '../../shared/logger';
import { hasAnyRole } from '../../shared/roles';
import { validate } from '../../shared/validation';
import { authenticate } from '../auth/authenticate';
import { challengeFor } from '../auth/challenge';
import type { Authentication } from '../auth/passport';
import { authenticatedPrincipal } from '../auth/principal';
import { sendJsonPieces } from '../http/json-stream';
import { labelOperation } from '../metrics/http-metrics';
import { queryEnvelopeSchema, type RegisteredQuery } from './query-definition';
import { withQueryType } from './query-type-member';

/** Where queries are sent. */
export const READ_MODEL_PATH = '/api/readmodel';

/**
 * POST /api/readmodel: authenticate, validate the envelope, find the query, check its scheme and
 * roles, validate its own fields, answer (opening with `queryType`). An anonymous caller learns nothing about schemas, and a
 * caller without the role learns nothing about the query's fields.
 */
export function registerReadModelRoutes(
  routes: RouteTable,
  deps: {
    readonly authentication: Authentication;
    readonly queries: readonly RegisteredQuery[];
    readonly modules: readonly ModuleName[];
    readonly logger: Logger;
    readonly bodyLimitBytes: number;
  },
): void {
  const registry = new Map(deps.queries.map((query) => [query.queryType, query]));

  const dispatch: RequestHandler = async (req, res) => {
    const principal = authenticatedPrincipal(req);
    // One joi pass per request: the envelope schema runs only to word the error when it is broken.
    const queryType = (req.body as { query?: { queryType?: unknown } } | undefined)?.query?.queryType;
    if (typeof queryType !== 'string' || queryType.length > 100) validate(queryEnvelopeSchema, req.body);
    const query = registry.get(String(queryType));
    if (!query) throw validationError({ QueryType: [`Unknown query type: ${String(queryType)}`] });
    if (query.module && !deps.modules.includes(query.module)) {
      throw new AppError(
        'NOT_FOUND',
        `${query.queryType} needs the module ${query.module}, which is not enabled.`,
        404,
      );
    }

    if (!query.schemes.includes(principal.authenticationType)) {
      res.setHeader('WWW-Authenticate', challengeFor(query.schemes));
      throw new AppError(
        'UNAUTHORIZED',
        `${query.queryType} accepts ${query.schemes.join(' or ')} authentication only.`,
        401,
      );
    }
    if (!hasAnyRole(principal.roles, query.roles)) {
      throw new AppError(
        'FORBIDDEN',
        `${query.queryType} requires one of the roles: ${query.roles.join(', ')}.`,
        403,
      );
    }

    const body = validate(query.schema, req.body);
    const answer = withQueryType(
      query.queryType,
      await query.handle({ principal, body, requestId: req.requestId }),
    );
    const status = answer.status ?? 200;
    if ('jsonPieces' in answer) await sendJsonPieces(res, status, answer.jsonPieces, deps.logger);
    // `?? ''`: what res.json sent for a body JSON has no text for (undefined).
    else sendJsonText(res, status, 'json' in answer ? answer.json : (JSON.stringify(answer.body) ?? ''));
  };

  routes.add(
    'post',
    READ_MODEL_PATH,
    labelOperation(['query', 'queryType'], (queryType) => registry.has(queryType)),
    authenticate(deps.authentication, 'problem'),
    jsonBody(deps.bodyLimitBytes),
    dispatch,
  );
}
