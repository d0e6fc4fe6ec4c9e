import type { ProblemStatus } from '../../shared/http/problem';
import type { JsonSchema } from '../http/json-schema';
import type { OperationExamples, SpecExample } from './spec-examples';

export type HttpMethod = 'get' | 'post';

/** An OpenAPI 3.1 operation as plain JSON data. */
export interface Operation {
  readonly operationId: string;
  readonly summary: string;
  readonly description?: string;
  readonly tags: readonly string[];
  readonly security: readonly Readonly<Record<string, readonly string[]>>[];
  /** Query and header parameters (OpenAPI parameter objects). */
  readonly parameters?: readonly Readonly<Record<string, unknown>>[];
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

/**
 * What a feature contributes to the document: one operation, beside the route that serves it
 * (`<feature>.contract.ts`). The document builder calls `operation` with the kit and only
 * assembles what the features gave.
 */
export interface OperationContract {
  readonly path: string;
  readonly method: HttpMethod;
  operation(kit: ContractKit): Operation;
}

/** What an operation is written with. */
export interface ContractKit {
  /** Names a schema under components/schemas (each name once) and answers its `$ref`. */
  readonly component: (name: string, schema: JsonSchema) => JsonSchema;
  readonly answers: Answers;
}

export const JSON_MEDIA = 'application/json';
export const PROBLEM_MEDIA = 'application/problem+json';

/** No authentication. */
export const PUBLIC: Operation['security'] = [];

/** Response objects shared by the operations. */
export class Answers {
  constructor(private readonly problems: Readonly<Record<ProblemStatus, JsonSchema>>) {}

  problem(status: ProblemStatus, description: string, examples?: readonly SpecExample[]): ResponseObject {
    return { description, content: { [PROBLEM_MEDIA]: media(this.problems[status], examples) } };
  }

  /**
   * A status answered either in the endpoint's own JSON shape or, from the HTTP layer, as a problem.
   * The Content-Type tells which; the JSON media type lists both shapes as well, because some
   * generators (@hey-api/openapi-ts) keep only the first JSON media type of a status, and the
   * problem's shape would be lost to their clients.
   */
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
          { anyOf: [json, this.problems[status]] },
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

  /** A body that is not JSON: an HTML page, a text exposition. */
  text(description: string, mediaType: string): ResponseObject {
    return { description, content: { [mediaType]: { schema: { type: 'string' } } } };
  }

  /** What every endpoint that reads a JSON body and Redis may also answer. */
  common(options: { authenticated: boolean }): Record<string, ResponseObject> {
    return {
      '413': this.problem(
        413,
        'The body, once inflated, is larger than BODY_LIMIT (IMPORT_BODY_LIMIT for imports, 8 KB for tokens); inflation stops at the limit.',
      ),
      ...(options.authenticated
        ? {
            '429': this.problem(
              429,
              'Too many failed sign-ins from the client address, for this account or for any; see Retry-After.',
            ),
          }
        : {}),
      ...this.serverFailure(),
      '503': this.problem(
        503,
        options.authenticated
          ? 'Redis is not reachable, or this instance is already checking AUTH_MAX_PENDING_VERIFICATIONS passwords; retry after Retry-After seconds.'
          : 'Redis is not reachable; retry after Retry-After seconds.',
      ),
    };
  }

  serverFailure(examples?: readonly SpecExample[]): Record<string, ResponseObject> {
    return { '500': this.problem(500, 'Server failure (details in the log, under the traceId).', examples) };
  }
}

export function media(schema: JsonSchema, examples: readonly SpecExample[] = []): MediaType {
  if (examples.length === 0) return { schema };
  return {
    schema,
    examples: Object.fromEntries(examples.map(({ name, summary, value }) => [name, { summary, value }])),
  };
}

export function requestBody(
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

/** A body that is one of several schemas, told apart by a top-level member (commandType, ...). */
export function discriminatedOneOf(
  propertyName: string,
  variants: readonly { readonly value: string; readonly ref: JsonSchema }[],
): JsonSchema {
  return {
    oneOf: variants.map((variant) => variant.ref),
    discriminator: {
      propertyName,
      mapping: Object.fromEntries(variants.map((variant) => [variant.value, variant.ref.$ref])),
    },
  };
}

export function responsesOf(examples: OperationExamples, status: number): readonly SpecExample[] {
  return examples.responses[status] ?? [];
}
