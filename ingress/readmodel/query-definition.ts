import Joi from 'joi';

import type { ModuleName } from '../../shared/config';
import type { Role } from '../../shared/roles';
import { text } from '../../shared/validation';
import type { AuthenticationScheme, Principal } from '../auth/principal';
import type { JsonSchema } from '../http/json-schema';

export interface QueryContext<Body> {
  readonly principal: Principal;
  /** The request body as the query's schema cleaned it (defaults applied). */
  readonly body: Body;
  readonly requestId: string;
}

/**
 * What a query answers: a status (200 unless said) and the JSON body, whole or as a stream of
 * JSON text pieces (for answers too large to hold: every mapped player). A stream's first piece
 * is awaited before anything is sent, so a failure up to then is still an ordinary problem.
 */
export type QueryAnswer =
  | { readonly status?: number; readonly body: unknown }
  /** JSON text the query joined itself (a hot path that skips building and serialising objects). */
  | { readonly status?: number; readonly json: string }
  | { readonly status?: number; readonly jsonPieces: AsyncIterable<string> };

/**
 * One read-model query: everything the endpoint needs to route, guard and answer it. Adding a
 * query is one folder exporting one of these, listed in the registry.
 */
export interface QueryDefinition<Body = unknown> {
  readonly queryType: string;
  readonly description: string;
  /** Schemes the query accepts; a caller signed in by another gets 401. */
  readonly schemes: readonly AuthenticationScheme[];
  /** Any one of these (after hierarchy expansion) may call; empty means any authenticated account. */
  readonly roles: readonly Role[];
  /** The MODULES entry that must be enabled; while it is not, the query answers 404. */
  readonly module?: ModuleName;
  /** Validates the whole request body (`query` and envelope fields such as skip and take). */
  readonly schema: Joi.ObjectSchema<Body>;
  /**
   * The JSON Schema of its 200 body. The OpenAPI document shows it, and the contract tests hold
   * every answer the integration suite receives to it.
   */
  readonly response: JsonSchema;
  /** True when it may answer the spec's 404 listing (4.1 rule 2): missing, or not the caller's. */
  readonly answersNotFoundListing?: boolean;
  handle(context: QueryContext<Body>): Promise<QueryAnswer>;
}

/** `{query: {queryType, ...}}`: the envelope every query shares, checked before dispatch. */
export const queryEnvelopeSchema = Joi.object({
  query: Joi.object({ queryType: text({ max: 100 }).required() })
    .unknown(true)
    .required(),
}).unknown(true);

/**
 * Builds a query's body schema from its `query` members and any envelope members it adds;
 * `refineQuery` adds rules across the `query` members (GetUser's `xor('id', 'email')`).
 */
export function querySchema<Body>(
  queryType: string,
  queryMembers: Joi.PartialSchemaMap = {},
  envelopeMembers: Joi.PartialSchemaMap = {},
  refineQuery: (query: Joi.ObjectSchema) => Joi.ObjectSchema = (query) => query,
): Joi.ObjectSchema<Body> {
  const query = Joi.object({ queryType: Joi.string().valid(queryType).required(), ...queryMembers });
  const schema = Joi.object({
    query: refineQuery(query).required(),
    ...envelopeMembers,
  });
  return schema as Joi.ObjectSchema<Body>;
}

/** A query as the registry holds it: its body type erased, since each validates its own. */
export type RegisteredQuery = QueryDefinition<unknown>;

/** Type-checks a query against its own body type, then files it among the others. */
export function defineQuery<Body>(definition: QueryDefinition<Body>): RegisteredQuery {
  return definition;
}
