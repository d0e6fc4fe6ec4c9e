import { PROBLEMS, type ProblemStatus } from '../../shared/http/problem';
import { componentRef, type JsonSchema, type JsonType } from '../http/json-schema';
import { problemSchema } from '../http/problem-schema';
import {
  Answers,
  type ContractKit,
  type HttpMethod,
  type Operation,
  type OperationContract,
} from './contract-kit';

export type { HttpMethod, MediaType, Operation, QueryTypeContract, ResponseObject } from './contract-kit';

/** The contract's own version: bump it with a release that changes the contract. */
export const CONTRACT_VERSION = '0.1.0';

/** Where the generated document is committed, relative to the repository's root. */
export const COMMITTED_DOCUMENT_PATH = 'docs/openapi.json';

/** An OpenAPI 3.1 document as plain JSON data. */
export interface OpenApiDocument {
  readonly openapi: '3.1.0';
  readonly info: Readonly<Record<string, unknown>>;
  readonly servers: readonly Readonly<Record<string, unknown>>[];
  readonly tags: readonly Readonly<Record<string, unknown>>[];
  readonly paths: Readonly<Record<string, Readonly<Partial<Record<HttpMethod, Operation>>>>>;
  /** What the service sends (webhooks), by event type. */
  readonly webhooks: Readonly<Record<string, Readonly<Partial<Record<HttpMethod, Operation>>>>>;
  readonly components: {
    readonly schemas: Readonly<Record<string, JsonSchema>>;
    readonly securitySchemes: Readonly<Record<string, unknown>>;
  };
}

const SECURITY_SCHEMES = {
  basicAuth: {
    type: 'http',
    scheme: 'basic',
    description:
      'The account\'s e-mail and password (RFC 7617), encoded as UTF-8 before base64 (the challenge says charset="UTF-8"); credentials that are not valid UTF-8 are refused. Machine accounts use this.',
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

/** The names operations use in `security`. */
export type SecuritySchemeName = keyof typeof SECURITY_SCHEMES;

/**
 * Assembles the OpenAPI 3.1 document from the operations the features contribute (each feature's
 * `*.contract.ts`), in the order given: the info, the tags, the security schemes, the problem
 * components and every component the operations named, sorted by name. Pure: the same
 * contributions give the same document, which `npm run openapi` writes to docs/openapi.json and a
 * test compares with the committed file.
 */
export function assembleOpenApiDocument(
  contracts: readonly OperationContract[],
  webhooks: (kit: ContractKit) => Record<string, Partial<Record<HttpMethod, Operation>>> = () => ({}),
): OpenApiDocument {
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
  const kit: ContractKit = { component, answers: new Answers(problems) };

  const paths: Record<string, Partial<Record<HttpMethod, Operation>>> = {};
  for (const contract of contracts) {
    const item = (paths[contract.path] ??= {});
    if (item[contract.method]) {
      throw new Error(`OpenAPI: two operations for ${contract.method.toUpperCase()} ${contract.path}`);
    }
    item[contract.method] = contract.operation(kit);
  }
  const sent = webhooks(kit);

  return withTypedValues({
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
      {
        name: 'Commands',
        description:
          'POST /api/command: commands on the fantasy team, user (account) and webhook subscription aggregates.',
      },
      { name: 'Imports', description: 'POST /api/import: bulk imports, queued or inline.' },
      { name: 'Authentication', description: 'Bearer tokens.' },
      { name: 'Events', description: 'GET /api/events: the event log as Server-Sent Events, resumable.' },
      { name: 'Operations', description: 'Probes and the queue dashboard.' },
      { name: 'Documentation', description: 'This document and its browser.' },
      {
        name: 'Webhooks',
        description:
          'What the service POSTs to webhook subscriptions (CreateWebhookSubscription): one entry per event type, signed per Standard Webhooks.',
      },
    ],
    servers: SERVERS,
    paths,
    webhooks: sent,
    components: { schemas: sortedByName(schemas), securitySchemes: SECURITY_SCHEMES },
  });
}

/**
 * Relative to where the document is served: every ingress serves its own document, so Swagger UI
 * and generated clients call the host they read it from, behind any proxy prefix.
 */
const SERVERS = [
  {
    url: '/',
    description: 'The service that served this document (GET /api/openapi.json); clients set their base URL.',
  },
];

/** Keywords whose values are data, not schemas: never walked. */
const VALUE_KEYWORDS = new Set(['const', 'enum', 'default', 'example', 'examples']);

/**
 * Gives every `enum` and `const` without a `type` the JSON types of its values
 * (`{enum: ["A", null]}` -> `{type: ["string", "null"], enum: [...]}`): a generator that reads
 * `type` first (one drops the null of an untyped enum) then writes the same union the server
 * sends. Adds nothing a value could fail: the types are those of the listed values.
 */
function withTypedValues<T>(node: T): T {
  if (Array.isArray(node)) return node.map(withTypedValues) as T;
  if (typeof node !== 'object' || node === null) return node;
  const walked = Object.fromEntries(
    Object.entries(node).map(([key, value]) => [
      key,
      VALUE_KEYWORDS.has(key) ? value : withTypedValues(value),
    ]),
  ) as Record<string, unknown>;
  const values = 'enum' in walked ? walked.enum : 'const' in walked ? [walked.const] : undefined;
  if (!Array.isArray(values) || 'type' in walked || '$ref' in walked) return walked as T;
  const types = [...new Set(values.map(jsonTypeOf))];
  return { type: types.length === 1 ? types[0] : types, ...walked } as T;
}

function jsonTypeOf(value: unknown): JsonType {
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'array';
  if (typeof value === 'number') return Number.isInteger(value) ? 'integer' : 'number';
  if (typeof value === 'string') return 'string';
  if (typeof value === 'boolean') return 'boolean';
  if (typeof value === 'object') return 'object';
  throw new Error(`OpenAPI: a ${typeof value} is not a JSON value`);
}

/** The committed file's text: two-space JSON and a final newline. */
export function documentText(document: OpenApiDocument): string {
  return `${JSON.stringify(document, null, 2)}\n`;
}

function sortedByName<T>(record: Readonly<Record<string, T>>): Record<string, T> {
  return Object.fromEntries(Object.entries(record).sort(([a], [b]) => a.localeCompare(b)));
}

const INFO_DESCRIPTION = [
  'Read queries, commands on event-sourced fantasy teams and accounts, and bulk imports. All bodies are JSON with',
  'camelCase names.',
  '',
  '- **Authentication**: Basic (e-mail and password) or Bearer (a JWT from `POST /api/auth/token`);',
  '  each operation, and each query type, lists the schemes it accepts and the roles it needs',
  '  (`x-roles`, `x-query-types`).',
  '- **Errors** are RFC 7807 problem details (`application/problem+json`) with `type`, `title`,',
  "  `status`, a `detail` or an `errors` map, and `traceId` (the response's X-Request-Id); commands",
  '  and imports answer their own shapes with an `errorCode`.',
  "- **X-Request-Id**: every response carries one; a caller's own well-formed id is kept.",
  '- **Bodies** are read only once the caller is authenticated (the token endpoint, at most 8 KB, is',
  '  the exception): UTF-8 JSON nested at most 64 levels, as is or in `Content-Encoding` gzip,',
  '  deflate or br, within the limit once inflated.',
].join('\n');
