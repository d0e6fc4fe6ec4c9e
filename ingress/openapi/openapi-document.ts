import type { Importer } from '../../shared/importers/importer';
import { BULL_BOARD_PATH, BULL_BOARD_ROLES } from '../admin/bull-board';
import type { AuthenticationScheme } from '../auth/principal';
import { OAUTH_ERROR_SCHEMA, TOKEN_GRANT_SCHEMAS, TOKEN_RESPONSE_SCHEMA } from '../auth/token.routes';
import type { CommandDefinition } from '../command/command-definitions';
import {
  COMMAND_ERRORS,
  COMMAND_SUCCEEDED_SCHEMA,
  commandFailedSchema,
  type CommandFailureStatus,
} from '../command/command-response';
import { COMMAND_ROLES, commandRequestSchema } from '../command/command.routes';
import { LIVENESS_SCHEMA, READINESS_SCHEMA } from '../health/health.routes';
import { PROBLEMS, problemSchema, type ProblemStatus } from '../http/problem';
import { IMPORT_RESPONSE_SCHEMA } from '../import/import-response';
import { METRICS_PATH } from '../metrics/metrics.routes';
import { importRequestSchema } from '../import/import.routes';
import { NOT_FOUND_LISTING_SCHEMA } from '../readmodel/listing';
import type { RegisteredQuery } from '../readmodel/query-definition';
import { joiToJsonSchema } from './joi-to-json-schema';
import { componentRef, type JsonSchema } from './json-schema';
import {
  COMMAND_EXAMPLES,
  IMPORT_EXAMPLES,
  READ_MODEL_EXAMPLES,
  type OperationExamples,
  type SpecExample,
} from './spec-examples';

/** Where the document and its browser are served. */
export const OPENAPI_PATH = '/api/openapi.json';
export const DOCS_PATH = '/api/docs';

/** The contract's own version: bump it with a release that changes the contract. */
export const CONTRACT_VERSION = '0.1.0';

/** What the document is generated from: the registries the endpoints dispatch on. */
export interface ContractSources {
  readonly queries: readonly RegisteredQuery[];
  readonly commands: readonly CommandDefinition[];
  readonly importers: readonly Importer[];
  /** IMPORT_MAX_ROWS: the importers' schemas depend on it. */
  readonly maxImportRows: number;
}

export type HttpMethod = 'get' | 'post';

/** An OpenAPI 3.1 document as plain JSON data. */
export interface OpenApiDocument {
  readonly openapi: '3.1.0';
  readonly info: Readonly<Record<string, unknown>>;
  readonly tags: readonly Readonly<Record<string, unknown>>[];
  readonly paths: Readonly<Record<string, Readonly<Partial<Record<HttpMethod, Operation>>>>>;
  readonly components: {
    readonly schemas: Readonly<Record<string, JsonSchema>>;
    readonly securitySchemes: Readonly<Record<string, unknown>>;
  };
}

export interface Operation {
  readonly operationId: string;
  readonly summary: string;
  readonly description?: string;
  readonly tags: readonly string[];
  readonly security: readonly Readonly<Record<string, readonly string[]>>[];
  readonly requestBody?: Readonly<Record<string, unknown>>;
  readonly responses: Readonly<Record<string, ResponseObject>>;
  readonly 'x-roles'?: readonly string[];
  /** POST /api/readmodel: what each query type takes, answers and needs. */
  readonly 'x-query-types'?: readonly QueryTypeContract[];
  readonly [extension: `x-${string}`]: unknown;
}

export interface ResponseObject {
  readonly description: string;
  readonly headers?: Readonly<Record<string, unknown>>;
  /** Absent: the response has no body. */
  readonly content?: Readonly<Record<string, MediaType>>;
}

export interface MediaType {
  readonly schema: JsonSchema;
  readonly examples?: Readonly<Record<string, { summary: string; value: unknown }>>;
}

/** One query type of POST /api/readmodel (the `x-query-types` extension). */
export interface QueryTypeContract {
  readonly queryType: string;
  readonly description: string;
  readonly security: readonly Readonly<Record<string, readonly string[]>>[];
  readonly roles: readonly string[];
  readonly module?: string;
  readonly request: JsonSchema;
  /** The answers particular to this query, by status; other statuses are the operation's. */
  readonly responses: Readonly<Record<string, JsonSchema>>;
}

const JSON_MEDIA = 'application/json';
const PROBLEM_MEDIA = 'application/problem+json';

const SECURITY_SCHEMES = {
  basicAuth: {
    type: 'http',
    scheme: 'basic',
    description: "The account's e-mail and password (RFC 7617). Machine accounts use this.",
  },
  bearerAuth: {
    type: 'http',
    scheme: 'bearer',
    bearerFormat: 'JWT',
    description: 'A token from POST /api/auth/token.',
  },
  metricsToken: {
    type: 'http',
    scheme: 'bearer',
    description: "METRICS_TOKEN, the scraper's own credential (not an account's token).",
  },
} as const;

const SCHEME_NAMES: Readonly<Record<AuthenticationScheme, keyof typeof SECURITY_SCHEMES>> = {
  Basic: 'basicAuth',
  Bearer: 'bearerAuth',
};

function securityOf(schemes: readonly AuthenticationScheme[]): Record<string, string[]>[] {
  return schemes.map((scheme) => ({ [SCHEME_NAMES[scheme]]: [] }));
}

const PUBLIC: Operation['security'] = [];
const BASIC_OR_BEARER = securityOf(['Basic', 'Bearer']);

/**
 * Builds the OpenAPI 3.1 document of every endpoint from the joi schemas that validate requests,
 * the registries of queries, commands and importers, and the response schemas each feature
 * declares. Pure: the same sources give the same document, which `npm run openapi` writes to
 * docs/openapi.json and a test compares with the committed file.
 */
export function buildOpenApiDocument(sources: ContractSources): OpenApiDocument {
  const schemas: Record<string, JsonSchema> = {};
  const component = (name: string, schema: JsonSchema): JsonSchema => {
    if (schemas[name]) throw new Error(`OpenAPI: two schemas are named ${name}`);
    schemas[name] = { title: name, ...schema };
    return componentRef(name);
  };

  const problems = Object.fromEntries(
    (Object.keys(PROBLEMS).map(Number) as ProblemStatus[]).map((status) => [
      status,
      component(`Problem${status}`, problemSchema(status)),
    ]),
  ) as Record<ProblemStatus, JsonSchema>;
  const answers = new Answers(problems);

  const paths = {
    '/api/readmodel': { post: readModelOperation(sources.queries, component, answers) },
    '/api/command': { post: commandOperation(sources.commands, component, answers) },
    '/api/import': { post: importOperation(sources, component, answers) },
    '/api/auth/token': { post: tokenOperation(component, answers) },
    '/healthz': { get: livenessOperation(component, answers) },
    '/readyz': { get: readinessOperation(component, answers) },
    [OPENAPI_PATH]: { get: documentOperation(answers) },
    [DOCS_PATH]: { get: docsOperation(answers) },
    [BULL_BOARD_PATH]: { get: bullBoardOperation(answers) },
    [METRICS_PATH]: { get: metricsOperation(answers) },
  };

  return {
    openapi: '3.1.0',
    info: {
      title: 'Fantasy team service',
      version: CONTRACT_VERSION,
      description: INFO_DESCRIPTION,
    },
    tags: [
      {
        name: 'Read model',
        description: 'POST /api/readmodel: one endpoint, the query chosen by query.queryType.',
      },
      { name: 'Commands', description: 'POST /api/command: commands on the fantasy team aggregate.' },
      { name: 'Imports', description: 'POST /api/import: bulk imports, queued or inline.' },
      { name: 'Authentication', description: 'Bearer tokens.' },
      { name: 'Operations', description: 'Probes and the queue dashboard.' },
      { name: 'Documentation', description: 'This document and its browser.' },
    ],
    paths,
    components: { schemas: sortedByName(schemas), securitySchemes: SECURITY_SCHEMES },
  };
}

type Component = (name: string, schema: JsonSchema) => JsonSchema;

/** Response objects shared by the operations. */
class Answers {
  constructor(private readonly problems: Readonly<Record<ProblemStatus, JsonSchema>>) {}

  problem(status: ProblemStatus, description: string, examples?: readonly SpecExample[]): ResponseObject {
    return { description, content: { [PROBLEM_MEDIA]: media(this.problems[status], examples) } };
  }

  /** A status answered either in the endpoint's own JSON shape or, from the HTTP layer, as a problem. */
  jsonOrProblem(
    status: ProblemStatus,
    description: string,
    json: JsonSchema,
    examples: readonly SpecExample[] = [],
  ): ResponseObject {
    return {
      description,
      content: {
        [JSON_MEDIA]: media(
          json,
          examples.filter((example) => example.mediaType !== PROBLEM_MEDIA),
        ),
        [PROBLEM_MEDIA]: media(
          this.problems[status],
          examples.filter((example) => example.mediaType === PROBLEM_MEDIA),
        ),
      },
    };
  }

  json(description: string, schema: JsonSchema, examples?: readonly SpecExample[]): ResponseObject {
    return { description, content: { [JSON_MEDIA]: media(schema, examples) } };
  }

  /** What every endpoint that reads a JSON body and Redis may also answer. */
  common(options: { authenticated: boolean }): Record<string, ResponseObject> {
    return {
      '413': this.problem(413, 'The body is larger than BODY_LIMIT (IMPORT_BODY_LIMIT for imports).'),
      ...(options.authenticated
        ? {
            '429': this.problem(429, 'Too many failed sign-ins for the account or address; see Retry-After.'),
          }
        : {}),
      ...this.serverFailure(),
      '503': this.problem(503, 'Redis is not reachable; retry after Retry-After seconds.'),
    };
  }

  serverFailure(examples?: readonly SpecExample[]): Record<string, ResponseObject> {
    return { '500': this.problem(500, 'Server failure (details in the log, under the traceId).', examples) };
  }

  unauthorized(examples?: readonly SpecExample[]): ResponseObject {
    return {
      ...this.problem(
        401,
        'Not authenticated, or by a scheme the query or command does not accept.',
        examples,
      ),
      headers: { 'WWW-Authenticate': { schema: { type: 'string' }, description: 'The accepted schemes.' } },
    };
  }
}

function media(schema: JsonSchema, examples: readonly SpecExample[] = []): MediaType {
  if (examples.length === 0) return { schema };
  return {
    schema,
    examples: Object.fromEntries(examples.map(({ name, summary, value }) => [name, { summary, value }])),
  };
}

function requestBody(
  description: string,
  schema: JsonSchema,
  examples: readonly SpecExample[],
  mediaTypes: readonly string[] = [JSON_MEDIA],
): Record<string, unknown> {
  return {
    required: true,
    description,
    content: Object.fromEntries(mediaTypes.map((type) => [type, media(schema, examples)])),
  };
}

function responsesOf(examples: OperationExamples, status: number): readonly SpecExample[] {
  return examples.responses[status] ?? [];
}

function readModelOperation(
  queries: readonly RegisteredQuery[],
  component: Component,
  answers: Answers,
): Operation {
  const examples = READ_MODEL_EXAMPLES;
  const contracts: QueryTypeContract[] = queries.map((query) => ({
    queryType: query.queryType,
    description: query.description,
    security: securityOf(query.schemes),
    roles: query.roles,
    ...(query.module ? { module: query.module } : {}),
    request: component(`${query.queryType}Query`, {
      description: query.description,
      ...joiToJsonSchema(query.schema),
    }),
    responses: {
      '200': component(resultName(query), query.response),
      ...(query.answersNotFoundListing ? { '404': componentRef('NotFoundListing') } : {}),
    },
  }));
  component('NotFoundListing', NOT_FOUND_LISTING_SCHEMA);
  const schemes = [...new Set(queries.flatMap((query) => query.schemes))];

  return {
    operationId: 'readModel',
    summary: 'Answer a read-model query',
    description: [
      'The query type is chosen by `query.queryType`. Order at the edge: authenticate, validate the',
      'envelope, find the query, check its scheme (401) and roles (403), validate its own fields (400).',
      '',
      '| queryType | schemes | roles (any one) | module | description |',
      '| --- | --- | --- | --- | --- |',
      ...queries.map(
        (query) =>
          `| \`${query.queryType}\` | ${query.schemes.join(', ')} | ${query.roles.join(', ') || 'any account'} | ${query.module ?? ''} | ${query.description} |`,
      ),
      '',
      "`x-query-types` gives each query's request and answer schemas.",
    ].join('\n'),
    tags: ['Read model'],
    security: securityOf(schemes),
    requestBody: requestBody(
      'The envelope: `query` (with `queryType` and its parameters) and the envelope fields of the query.',
      { oneOf: contracts.map((contract) => contract.request) },
      examples.requests,
    ),
    responses: {
      '200': answers.json(
        "The query's answer (see x-query-types for which shape belongs to which query).",
        { anyOf: contracts.map((contract) => contract.responses['200'] as JsonSchema) },
        responsesOf(examples, 200),
      ),
      '400': answers.problem(
        400,
        'A field of the envelope or the query is invalid, the query type is unknown, or the body is not JSON.',
        responsesOf(examples, 400),
      ),
      '401': answers.unauthorized(responsesOf(examples, 401)),
      '403': answers.problem(403, 'The account has none of the roles the query requires.'),
      '404': answers.jsonOrProblem(
        404,
        "The spec's 404 listing (the item is missing or not the caller's), or a problem when the query's module is not enabled.",
        componentRef('NotFoundListing'),
        responsesOf(examples, 404),
      ),
      ...answers.common({ authenticated: true }),
      ...answers.serverFailure(responsesOf(examples, 500)),
    },
    'x-query-types': contracts,
  };
}

function commandOperation(
  definitions: readonly CommandDefinition[],
  component: Component,
  answers: Answers,
): Operation {
  const examples = COMMAND_EXAMPLES;
  const requests = definitions.map((definition) => ({
    commandType: definition.commandType,
    ref: component(`${definition.commandType}Command`, {
      description: definition.description,
      ...joiToJsonSchema(commandRequestSchema(definition)),
    }),
  }));
  const succeeded = component('CommandSucceeded', COMMAND_SUCCEEDED_SCHEMA);
  const failed = (status: CommandFailureStatus) =>
    component(`CommandFailed${status}`, commandFailedSchema(status));
  const codesOf = (status: CommandFailureStatus) =>
    Object.entries(COMMAND_ERRORS)
      .filter(([, error]) => error.status === status)
      .map(([code, error]) => `\`${code}\`: ${error.meaning}`)
      .join(' ');

  return {
    operationId: 'command',
    summary: 'Run a command on a fantasy team',
    description: [
      'The command type is chosen by `commandType`; `command` holds its fields. Every answer has the',
      "spec's 2.6 shape; a refusal carries an `errorCode`:",
      '',
      '| errorCode | status | when |',
      '| --- | --- | --- |',
      ...Object.entries(COMMAND_ERRORS).map(
        ([code, error]) => `| \`${code}\` | ${error.status} | ${error.meaning} |`,
      ),
    ].join('\n'),
    tags: ['Commands'],
    security: securityOf(['Bearer']),
    'x-roles': COMMAND_ROLES,
    requestBody: requestBody(
      'One command: its type, its fields, and optionally expectedVersion and requestId.',
      {
        oneOf: requests.map((request) => request.ref),
        discriminator: {
          propertyName: 'commandType',
          mapping: Object.fromEntries(requests.map((request) => [request.commandType, request.ref.$ref])),
        },
      },
      examples.requests,
    ),
    responses: {
      '200': answers.json('Accepted: the events are stored.', succeeded, responsesOf(examples, 200)),
      '400': answers.jsonOrProblem(
        400,
        `Refused: ${codesOf(400)} A body that is not JSON gets the 400 problem.`,
        failed(400),
        responsesOf(examples, 400),
      ),
      '401': answers.unauthorized(),
      '403': answers.json(`Refused: ${codesOf(403)}`, failed(403)),
      '409': answers.json(`Refused: ${codesOf(409)}`, failed(409)),
      ...answers.common({ authenticated: true }),
      '503': {
        ...answers.jsonOrProblem(
          503,
          `Refused: ${codesOf(503)} Or Redis is not reachable (a problem). Both carry Retry-After.`,
          failed(503),
        ),
        headers: { 'Retry-After': { schema: { type: 'integer' } } },
      },
    },
    'x-command-types': definitions.map((definition) => ({
      commandType: definition.commandType,
      description: definition.description,
    })),
  };
}

function importOperation(sources: ContractSources, component: Component, answers: Answers): Operation {
  const examples = IMPORT_EXAMPLES;
  const requests = sources.importers.map((importer) => ({
    importerType: importer.importerType,
    ref: component(`${importer.importerType}Import`, {
      description: `${importer.description} Its commands need one of the roles: ${importer.requiredRoles.join(', ')}.`,
      ...joiToJsonSchema(importRequestSchema(importer, sources.maxImportRows)),
    }),
  }));
  const response = component('ImportResponse', IMPORT_RESPONSE_SCHEMA);

  return {
    operationId: 'import',
    summary: 'Submit a bulk import',
    description: [
      'Any authenticated account may submit; the roles an importer needs are checked while it runs',
      '(spec 5 rule 4), so a refusal there is a 200 with status `Failed` and errorCode',
      '`AGGREGATE_PROCESSING_FAILED`. `Normal` is queued; `High` runs inline when the queue is idle.',
      '',
      '| importerType | roles its commands need | description |',
      '| --- | --- | --- |',
      ...sources.importers.map(
        (importer) =>
          `| \`${importer.importerType}\` | ${importer.requiredRoles.join(', ')} | ${importer.description} |`,
      ),
    ].join('\n'),
    tags: ['Imports'],
    security: BASIC_OR_BEARER,
    requestBody: requestBody(
      "The envelope, with the importer's own data as `importData`.",
      {
        oneOf: requests.map((request) => request.ref),
        discriminator: {
          propertyName: 'importerType',
          mapping: Object.fromEntries(requests.map((request) => [request.importerType, request.ref.$ref])),
        },
      },
      examples.requests,
    ),
    responses: {
      '200': answers.json(
        'Queued (Pending), run inline (Completed or Failed), a dry run, or the job a repeated requestId made.',
        response,
        responsesOf(examples, 200),
      ),
      '400': answers.jsonOrProblem(
        400,
        'An unknown importerType (spec 2.7 shape, UNKNOWN_IMPORTER_TYPE, all-zero importJobId), or a validation problem.',
        response,
        responsesOf(examples, 400),
      ),
      '401': { description: 'Not authenticated: an empty body (spec 4.6).' },
      ...answers.common({ authenticated: true }),
    },
    'x-importer-types': sources.importers.map((importer) => ({
      importerType: importer.importerType,
      description: importer.description,
      requiredRoles: importer.requiredRoles,
    })),
  };
}

function tokenOperation(component: Component, answers: Answers): Operation {
  const grants = Object.entries(TOKEN_GRANT_SCHEMAS).map(([grant, schema]) => ({
    grant,
    ref: component(
      grant === 'password' ? 'PasswordGrant' : 'ClientCredentialsGrant',
      joiToJsonSchema(schema),
    ),
  }));
  const oauthError = component('OAuthError', OAUTH_ERROR_SCHEMA);
  return {
    operationId: 'issueToken',
    summary: 'Issue a bearer token (RFC 6749 style)',
    description:
      'grant_type `password` (username = e-mail) or `client_credentials` (credentials in a Basic header, or client_id and client_secret). JSON or form-encoded. Answers are never cached.',
    tags: ['Authentication'],
    // No authentication needed; client_credentials may send its credentials as Basic.
    security: [{}, { basicAuth: [] }],
    requestBody: requestBody(
      'A grant.',
      {
        oneOf: grants.map(({ ref }) => ref),
        discriminator: {
          propertyName: 'grant_type',
          mapping: Object.fromEntries(grants.map(({ grant, ref }) => [grant, ref.$ref])),
        },
      },
      [
        {
          name: 'PasswordGrant',
          summary: 'Password grant',
          value: { grant_type: 'password', username: 'member@example.com', password: 'a-long-password' },
        },
      ],
      [JSON_MEDIA, 'application/x-www-form-urlencoded'],
    ),
    responses: {
      '200': answers.json('A token.', component('TokenResponse', TOKEN_RESPONSE_SCHEMA)),
      '400': answers.jsonOrProblem(
        400,
        'invalid_request, invalid_grant (wrong e-mail or password) or unsupported_grant_type; a body that is not JSON gets the 400 problem.',
        oauthError,
      ),
      '401': answers.json('invalid_client: the client credentials are wrong.', oauthError),
      ...answers.common({ authenticated: true }),
    },
  };
}

function livenessOperation(component: Component, answers: Answers): Operation {
  return {
    operationId: 'liveness',
    summary: 'Liveness: the process is up (no dependency checked)',
    tags: ['Operations'],
    security: PUBLIC,
    responses: {
      '200': answers.json('Alive.', component('Liveness', LIVENESS_SCHEMA)),
      ...answers.serverFailure(),
    },
  };
}

function readinessOperation(component: Component, answers: Answers): Operation {
  return {
    operationId: 'readiness',
    summary: 'Readiness: Redis answers, send traffic here',
    tags: ['Operations'],
    security: PUBLIC,
    responses: {
      '200': answers.json('Ready.', component('Readiness', READINESS_SCHEMA)),
      ...answers.serverFailure(),
      '503': answers.problem(503, 'Redis is not reachable (Retry-After: 1).'),
    },
  };
}

function documentOperation(answers: Answers): Operation {
  return {
    operationId: 'openApiDocument',
    summary: 'This OpenAPI 3.1 document',
    tags: ['Documentation'],
    security: PUBLIC,
    responses: {
      '200': answers.json('The document.', { type: 'object', required: ['openapi', 'info', 'paths'] }),
      ...answers.serverFailure(),
    },
  };
}

function docsOperation(answers: Answers): Operation {
  return {
    operationId: 'apiDocs',
    summary: 'Swagger UI over this document (assets served locally)',
    tags: ['Documentation'],
    security: PUBLIC,
    responses: {
      '200': {
        description: 'The Swagger UI page.',
        content: { 'text/html': { schema: { type: 'string' } } },
      },
      ...answers.serverFailure(),
    },
  };
}

function bullBoardOperation(answers: Answers): Operation {
  return {
    operationId: 'queueDashboard',
    summary: 'The import queue dashboard (Bull Board, read-only)',
    description:
      'A browser page; its assets and API live under the same path and are not part of this contract.',
    tags: ['Operations'],
    security: BASIC_OR_BEARER,
    'x-roles': BULL_BOARD_ROLES,
    responses: {
      '200': { description: 'The dashboard page.', content: { 'text/html': { schema: { type: 'string' } } } },
      '401': answers.unauthorized(),
      '403': answers.problem(403, 'The account lacks the role Admin.'),
      '429': answers.problem(429, 'Too many failed sign-ins; see Retry-After.'),
      ...answers.serverFailure(),
      '503': answers.problem(503, 'Redis is not reachable.'),
    },
  };
}

/** The component name of a query's answer: its schema's title, or `<queryType>Result`. */
function resultName(query: RegisteredQuery): string {
  return typeof query.response.title === 'string' ? query.response.title : `${query.queryType}Result`;
}

function metricsOperation(answers: Answers): Operation {
  return {
    operationId: 'metrics',
    summary: 'Prometheus metrics of the process that answers',
    description:
      'Served on PORT only while METRICS_TOKEN is set (send it as a Bearer token); with METRICS_PORT, on a listener of its own (workers too); otherwise not at all. Not cached.',
    tags: ['Operations'],
    security: [{ metricsToken: [] }],
    responses: {
      '200': {
        description: 'The Prometheus text exposition (prom-client, names prefixed fts_).',
        content: { 'text/plain': { schema: { type: 'string' } } },
      },
      '401': {
        ...answers.problem(401, 'METRICS_TOKEN is set and was not sent, or another token was.'),
        headers: {
          'WWW-Authenticate': { schema: { type: 'string' }, description: 'Bearer realm="metrics".' },
        },
      },
      '404': answers.problem(404, 'Not served on this port: METRICS_TOKEN is not set.'),
      ...answers.serverFailure(),
    },
  };
}

function sortedByName<T>(record: Readonly<Record<string, T>>): Record<string, T> {
  return Object.fromEntries(Object.entries(record).sort(([a], [b]) => a.localeCompare(b)));
}

const INFO_DESCRIPTION = [
  'Read queries, commands on event-sourced fantasy teams, and bulk imports. All bodies are JSON with',
  'camelCase names.',
  '',
  '- **Authentication**: Basic (e-mail and password) or Bearer (a JWT from `POST /api/auth/token`);',
  '  each operation, and each query type, lists the schemes it accepts and the roles it needs',
  '  (`x-roles`, `x-query-types`).',
  '- **Errors** are RFC 7807 problem details (`application/problem+json`) with `type`, `title`,',
  "  `status`, a `detail` or an `errors` map, and `traceId` (the response's X-Request-Id); commands",
  '  and imports answer their own shapes with an `errorCode`.',
  "- **X-Request-Id**: every response carries one; a caller's own well-formed id is kept.",
].join('\n');
