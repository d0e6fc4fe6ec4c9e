/**
 * A JSON Schema (draft 2020-12, the dialect of OpenAPI 3.1) as plain data. Loose on purpose:
 * the OpenAPI validity test and ajv's strict compile in the contract tests check the keywords,
 * so the type only has to keep a schema JSON-shaped.
 */
export interface JsonSchema {
  readonly type?: JsonType | readonly JsonType[];
  readonly $ref?: string;
  readonly const?: unknown;
  readonly enum?: readonly unknown[];
  readonly properties?: Readonly<Record<string, JsonSchema>>;
  readonly patternProperties?: Readonly<Record<string, JsonSchema>>;
  readonly additionalProperties?: boolean | JsonSchema;
  readonly required?: readonly string[];
  readonly items?: JsonSchema;
  readonly anyOf?: readonly JsonSchema[];
  readonly oneOf?: readonly JsonSchema[];
  readonly allOf?: readonly JsonSchema[];
  readonly description?: string;
  readonly examples?: readonly unknown[];
  readonly [keyword: string]: unknown;
}

export type JsonType = 'string' | 'number' | 'integer' | 'boolean' | 'object' | 'array' | 'null';

/** `{ $ref }` to a schema under components/schemas of the OpenAPI document. */
export function componentRef(name: string): JsonSchema {
  return { $ref: `#/components/schemas/${name}` };
}

/** A GUID as the service writes it (lower case, 8-4-4-4-12). */
export const GUID_SCHEMA: JsonSchema = { type: 'string', format: 'uuid' };

/** An ISO 8601 UTC timestamp as `Date.prototype.toISOString` writes it. */
export const TIMESTAMP_SCHEMA: JsonSchema = { type: 'string', format: 'date-time' };

/** A closed object: every listed property, nothing else (what a response of ours looks like). */
export function closedObject(
  properties: Readonly<Record<string, JsonSchema>>,
  optional: readonly string[] = [],
  extra: Omit<JsonSchema, 'type' | 'properties' | 'required' | 'additionalProperties'> = {},
): JsonSchema {
  return {
    ...extra,
    type: 'object',
    properties,
    required: Object.keys(properties).filter((name) => !optional.includes(name)),
    additionalProperties: false,
  };
}
