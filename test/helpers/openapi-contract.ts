import Ajv2020, { type ErrorObject, type ValidateFunction } from 'ajv/dist/2020';
import addFormats from 'ajv-formats';

import { repositoryDocument } from '../../ingress/contract';
import type { JsonSchema } from '../../ingress/http/json-schema';
import type {
  HttpMethod,
  MediaType,
  OpenApiDocument,
  Operation,
} from '../../ingress/openapi/openapi-document';

/** One request and its response, as a test saw them. */
export interface Exchange {
  readonly method: string;
  /** The path, without the query string. */
  readonly path: string;
  readonly requestBody: unknown;
  readonly status: number;
  /** The Content-Type header, if any. */
  readonly contentType: string | undefined;
  /** The parsed JSON body (JSON media types), else anything. */
  readonly body: unknown;
  readonly text: string;
}

export type Verdict =
  | { readonly kind: 'conforms' }
  | { readonly kind: 'skipped'; readonly reason: string }
  | { readonly kind: 'violates'; readonly problems: readonly string[] };

const CONTRACT_ID = 'https://fantasy-team-service.invalid/openapi';
const JSON_MEDIA_TYPES = new Set(['application/json', 'application/problem+json']);

/**
 * Checks responses against the OpenAPI document: the status must be documented for the
 * operation, the Content-Type must be one of its media types (no body where none is documented),
 * and a JSON body must match the schema (ajv, draft 2020-12, as OpenAPI 3.1). A read-model
 * answer is held to its own query's schema (`x-query-types`), not just to any query's.
 */
export class ResponseContract {
  private readonly ajv: Ajv2020;
  private readonly compiled = new Map<string, ValidateFunction>();
  /** Query types a test registered for itself (BuildAppOptions.extraQueries): not the contract's. */
  private readonly testOnlyQueryTypes = new Set<string>();

  constructor(private readonly document: OpenApiDocument) {
    this.ajv = new Ajv2020({ strict: true, strictRequired: false, allErrors: true });
    addFormats(this.ajv);
    // OpenAPI's own keywords in schema objects: meaningful to clients, not to validation.
    this.ajv.addVocabulary(['discriminator']);
    this.ajv.addSchema({ $id: CONTRACT_ID, $defs: localRefs(document.components.schemas) });
  }

  ignoreQueryTypes(queryTypes: Iterable<string>): void {
    for (const queryType of queryTypes) this.testOnlyQueryTypes.add(queryType);
  }

  check(exchange: Exchange): Verdict {
    const method = exchange.method.toLowerCase() as HttpMethod;
    const pathItem = this.document.paths[exchange.path];
    if (!pathItem) return { kind: 'skipped', reason: `${exchange.path} is not in the document` };
    const operation = pathItem[method];
    if (!operation) return { kind: 'skipped', reason: `${exchange.method} is not documented there` };
    const where = `${exchange.method.toUpperCase()} ${exchange.path}`;

    const queryType = readModelQueryType(operation, exchange.requestBody);
    if (queryType !== undefined && this.testOnlyQueryTypes.has(queryType)) {
      return { kind: 'skipped', reason: `${queryType} is a test's own query` };
    }

    const response = operation.responses[String(exchange.status)];
    if (!response) {
      return violates(`${where} answered ${exchange.status}, which the document does not list for it`);
    }
    const mediaType = exchange.contentType?.split(';')[0]?.trim().toLowerCase();
    if (!response.content) {
      return exchange.text
        ? violates(`${where} ${exchange.status} has no body in the document, but answered ${exchange.text}`)
        : { kind: 'conforms' };
    }
    const media = mediaType === undefined ? undefined : response.content[mediaType];
    if (!media) {
      return violates(
        `${where} ${exchange.status} answered Content-Type ${exchange.contentType ?? '(none)'}; ` +
          `the document has ${Object.keys(response.content).join(', ')}`,
      );
    }
    if (!JSON_MEDIA_TYPES.has(mediaType ?? '')) return { kind: 'conforms' };

    const { schema, pointer } = this.expectedSchema(operation, media, {
      where: `#/paths/${escapePointer(exchange.path)}/${method}/responses/${exchange.status}/content/${escapePointer(mediaType ?? '')}/schema`,
      queryType,
      status: exchange.status,
      mediaType: mediaType ?? '',
    });
    const validate = this.compile(pointer, schema);
    if (validate(exchange.body)) return { kind: 'conforms' };
    return violates(
      `${where} ${exchange.status} ${mediaType} does not match ${pointer}:`,
      ...describeErrors(validate.errors ?? []),
      `body: ${truncate(exchange.text)}`,
    );
  }

  /** The query's own answer schema where it has one for the status, else the operation's. */
  private expectedSchema(
    operation: Operation,
    media: MediaType,
    at: { where: string; queryType: string | undefined; status: number; mediaType: string },
  ): { schema: JsonSchema; pointer: string } {
    const query = operation['x-query-types']?.find((contract) => contract.queryType === at.queryType);
    const own = at.mediaType === 'application/json' ? query?.responses[String(at.status)] : undefined;
    if (query && own) {
      return { schema: own, pointer: `x-query-types[${query.queryType}].responses.${at.status}` };
    }
    return { schema: media.schema, pointer: at.where };
  }

  private compile(key: string, schema: JsonSchema): ValidateFunction {
    let validate = this.compiled.get(key);
    if (!validate) {
      validate = this.ajv.compile(localRefs(schema));
      this.compiled.set(key, validate);
    }
    return validate;
  }
}

function readModelQueryType(operation: Operation, requestBody: unknown): string | undefined {
  if (!operation['x-query-types']) return undefined;
  const queryType = (requestBody as { query?: { queryType?: unknown } } | undefined)?.query?.queryType;
  return typeof queryType === 'string' ? queryType : undefined;
}

/** `#/components/schemas/X` -> the registered contract's `$defs/X`, throughout a copy of `value`. */
function localRefs<T>(value: T): T {
  return JSON.parse(
    JSON.stringify(value).replaceAll('"#/components/schemas/', `"${CONTRACT_ID}#/$defs/`),
  ) as T;
}

function describeErrors(errors: readonly ErrorObject[]): string[] {
  return errors.slice(0, 8).map((error) => {
    const params = JSON.stringify(error.params);
    return `  ${error.instancePath || '(body)'} ${error.message ?? 'is invalid'} ${params}`;
  });
}

function escapePointer(segment: string): string {
  return segment.replaceAll('~', '~0').replaceAll('/', '~1');
}

function truncate(text: string): string {
  return text.length > 600 ? `${text.slice(0, 600)}...` : text;
}

function violates(...problems: string[]): Verdict {
  return { kind: 'violates', problems };
}

let shared: ResponseContract | undefined;

/** The contract of the document the code generates (the drift test keeps the committed file equal), once per test file. */
export function responseContract(): ResponseContract {
  shared ??= new ResponseContract(repositoryDocument());
  return shared;
}
