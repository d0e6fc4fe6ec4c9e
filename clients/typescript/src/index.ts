import createClient from 'openapi-fetch';

import { basicAuthorization } from './basic';
import { QUERY_SCHEMES } from './generated/query-schemes';
import type { components, paths } from './generated/schema';
import { retryingFetch, type RetryOptions } from './retry';

export { basicAuthorization } from './basic';
export type { components, paths } from './generated/schema';
export type { RetryOptions } from './retry';

export type Schemas = components['schemas'];
type QueryTypes = Schemas['ReadModelQueryTypes'];

/** A read-model query type, as the document lists them. */
export type QueryType = keyof QueryTypes;
/** The whole request body of a query: `{query: {queryType, ...}, ...envelope}`. */
export type QueryRequest<Q extends QueryType> = QueryTypes[Q]['request'];
/** The 200 answer of a query (the document's pairing, `ReadModelQueryTypes`). */
export type QueryAnswer<Q extends QueryType> = QueryTypes[Q]['answer'];
/** A query's own fields: what goes in `query`, but `queryType` (the method says it). */
export type QueryFields<Q extends QueryType> = Omit<QueryRequest<Q>['query'], 'queryType'>;
/** The envelope's optional members (`skip`, `take`); a constant one (`dataType`) the client sends. */
export type QueryEnvelope<Q extends QueryType> = Omit<QueryRequest<Q>, 'query' | 'dataType'>;

type Json<P extends keyof paths> = paths[P] extends {
  post: { requestBody: { content: { 'application/json': infer Body } } };
}
  ? Body
  : never;
export type CommandRequest = Json<'/api/command'>;
export type CommandAnswer = Schemas['CommandSucceeded'];
export type ImportRequest = Json<'/api/import'>;
export type ImportAnswer = Schemas['ImportResponse'];
export type TokenAnswer = Schemas['TokenResponse'];
export type Scheme = 'Basic' | 'Bearer';

/** One typed method per query (the name says the query; `getTeamRatingInput` is `GetTeamRatingInputByTeamId`). */
const QUERY_METHODS = {
  currentUser: 'CurrentUser',
  getTeamRatingInput: 'GetTeamRatingInputByTeamId',
  getMappedPlayers: 'GetMappedPlayers',
  getFantasyTeam: 'GetFantasyTeam',
  availableImporters: 'AvailableImporters',
  getImportJobResult: 'GetImportJobResult',
  getUser: 'GetUser',
  listUsers: 'ListUsers',
  listWebhookSubscriptions: 'ListWebhookSubscriptions',
  getWebhookDeliveries: 'GetWebhookDeliveries',
} as const satisfies Record<string, QueryType>;

/**
 * The constant envelope members a query requires, which its method sends by itself (typed from the
 * document: a changed constant fails the typecheck).
 */
const CONSTANT_ENVELOPE: Partial<Record<QueryType, object>> = {
  GetTeamRatingInputByTeamId: { dataType: 'TeamRatingInput' } satisfies Pick<
    QueryRequest<'GetTeamRatingInputByTeamId'>,
    'dataType'
  >,
};

type QueryMethods = typeof QUERY_METHODS;
/** A query the document has and the client has no method for fails the typecheck here, by name. */
type WithoutMethod = Exclude<QueryType, QueryMethods[keyof QueryMethods]>;
const EVERY_QUERY_HAS_A_METHOD: [WithoutMethod] extends [never] ? true : WithoutMethod = true;
void EVERY_QUERY_HAS_A_METHOD;

type Arguments<Q extends QueryType> =
  Partial<QueryFields<Q>> extends QueryFields<Q>
    ? [fields?: QueryFields<Q>, envelope?: QueryEnvelope<Q>]
    : [fields: QueryFields<Q>, envelope?: QueryEnvelope<Q>];

export type ReadModel = {
  readonly [M in keyof QueryMethods]: (
    ...args: Arguments<QueryMethods[M]>
  ) => Promise<QueryAnswer<QueryMethods[M]>>;
};

/** An answer other than the operation's success: its status and body (none for the import's 401). */
export class FantasyApiError extends Error {
  constructor(
    readonly operation: string,
    readonly status: number,
    readonly body: unknown,
  ) {
    super(`${operation} answered ${status}${describe(body)}`);
    this.name = 'FantasyApiError';
  }
}

export interface ClientOptions {
  /** Where the service is, e.g. `http://127.0.0.1:8080` (the document's `servers` is relative). */
  readonly baseUrl: string;
  /** An account's e-mail and password: Basic (sent as UTF-8), and what `signIn` exchanges for a token. */
  readonly credentials?: { readonly email: string; readonly password: string };
  /** A Bearer token from `POST /api/auth/token`; `signIn` sets one. */
  readonly token?: string;
  readonly retry?: RetryOptions;
  readonly fetch?: typeof fetch;
}

/**
 * The fantasy team service, typed from docs/openapi.json. Each read-model query has its own method
 * answering its own type, sent with a scheme the query accepts (Bearer when the client holds a
 * token and the query takes it, else Basic); a 503 with Retry-After is retried a bounded number of
 * times. Any other answer than success throws a `FantasyApiError`.
 */
export class FantasyTeamClient {
  private readonly http;
  private token: string | undefined;
  readonly readModel: ReadModel;

  constructor(private readonly options: ClientOptions) {
    this.token = options.token;
    this.http = createClient<paths>({
      baseUrl: options.baseUrl,
      fetch: retryingFetch(options.fetch ?? globalThis.fetch, options.retry),
    });
    this.readModel = Object.fromEntries(
      Object.entries(QUERY_METHODS).map(([method, queryType]) => [
        method,
        (fields?: object, envelope?: object) => this.query(queryType, fields, envelope),
      ]),
    ) as unknown as ReadModel;
  }

  /** Exchanges the credentials for a Bearer token (password grant), which later calls use. */
  async signIn(): Promise<TokenAnswer> {
    const { email, password } = this.requireCredentials('signIn');
    const answer = await this.http.POST('/api/auth/token', {
      body: { grant_type: 'password', username: email, password },
    });
    const token = success('POST /api/auth/token', answer);
    this.token = token.access_token;
    return token;
  }

  /** Any query by its type; the per-query methods of `readModel` call this. */
  async query<Q extends QueryType>(
    queryType: Q,
    fields: object = {},
    envelope: object = {},
  ): Promise<QueryAnswer<Q>> {
    // The method's signature typed the fields; the union of every query's body cannot follow a generic Q.
    const body = {
      ...CONSTANT_ENVELOPE[queryType],
      ...envelope,
      query: { queryType, ...fields },
    } as Json<'/api/readmodel'>;
    const answer = await this.http.POST('/api/readmodel', {
      body,
      headers: { Authorization: this.authorization(queryType, QUERY_SCHEMES[queryType]) },
    });
    return success(queryType, answer);
  }

  /**
   * One command (Bearer). A command without a `requestId` (absent or null) gets one, so that a
   * retry after a 503 (or the caller's own) is answered once, never applied twice.
   */
  async command(request: CommandRequest): Promise<CommandAnswer> {
    const answer = await this.http.POST('/api/command', {
      body: { ...request, requestId: request.requestId ?? crypto.randomUUID() },
      headers: { Authorization: this.authorization(request.commandType, ['Bearer']) },
    });
    return success(request.commandType, answer);
  }

  /**
   * A bulk import (Bearer or Basic). Its 401 has no body at all (spec 4.6): the status, not the
   * body, tells it, and it throws like any other refusal.
   */
  async import(request: ImportRequest): Promise<ImportAnswer> {
    const answer = await this.http.POST('/api/import', {
      body: request,
      headers: { Authorization: this.authorization(request.importerType, ['Bearer', 'Basic']) },
    });
    return success(request.importerType, answer);
  }

  private authorization(operation: string, accepted: readonly Scheme[]): string {
    if (this.token && accepted.includes('Bearer')) return `Bearer ${this.token}`;
    if (this.options.credentials && accepted.includes('Basic')) {
      return basicAuthorization(this.options.credentials.email, this.options.credentials.password);
    }
    const needs = accepted.includes('Bearer') ? 'a token (signIn)' : 'credentials';
    throw new Error(`${operation} accepts ${accepted.join(' or ')}: the client needs ${needs}`);
  }

  private requireCredentials(operation: string): NonNullable<ClientOptions['credentials']> {
    if (!this.options.credentials) throw new Error(`${operation} needs the client's credentials`);
    return this.options.credentials;
  }
}

/** What openapi-fetch answers: the parsed body of a success or of a refusal, and the response. */
interface Answer<T> {
  readonly data?: T;
  readonly error?: unknown;
  readonly response: Response;
}

/** The body of a 2xx answer; anything else, an empty 401 included, throws with status and body. */
function success<T>(operation: string, { data, error, response }: Answer<T>): T {
  if (response.ok && data !== undefined) return data;
  throw new FantasyApiError(operation, response.status, error);
}

function describe(body: unknown): string {
  if (body === undefined) return ' (no body)';
  if (typeof body === 'object' && body !== null) {
    const { errorCode, errorMessage, detail, error, errors } = body as Record<string, unknown>;
    const said = [errorCode ?? error, errorMessage ?? detail].filter((part) => typeof part === 'string');
    if (errors !== undefined) said.push(JSON.stringify(errors));
    if (said.length) return `: ${said.join(': ')}`;
  }
  return '';
}
