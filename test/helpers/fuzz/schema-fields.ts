import type { JsonSchema } from '../../../ingress/http/json-schema';

/** A place in a JSON value: member names and array indexes from the root. */
export type JsonPath = readonly (string | number)[];

/** One value of a body and the schema the document gives for it. */
export interface SchemaField {
  readonly path: JsonPath;
  readonly schema: JsonSchema;
}

/** `schema` itself, or what its `#/$defs/...` reference names within `root`. */
export function resolveSchema(schema: JsonSchema, root: JsonSchema): JsonSchema {
  let current = schema;
  for (let hops = 0; current.$ref && hops < 16; hops++) {
    const name = current.$ref.replace('#/$defs/', '');
    const defs = root.$defs as Record<string, JsonSchema> | undefined;
    const target = defs?.[name];
    if (!target) throw new Error(`unresolvable reference ${current.$ref}`);
    current = target;
  }
  return current;
}

/** Whether the schema admits `type` (a `type` list included). */
export function admits(schema: JsonSchema, type: string): boolean {
  const types = schema.type;
  return Array.isArray(types) ? types.includes(type) : types === type;
}

/** Every value within `value` that the schema describes, with that schema (the root included). */
export function schemaFields(value: unknown, schema: JsonSchema, root: JsonSchema = schema): SchemaField[] {
  const out: SchemaField[] = [];
  const walk = (current: unknown, at: JsonSchema, path: JsonPath) => {
    const resolved = resolveSchema(at, root);
    out.push({ path, schema: resolved });
    if (Array.isArray(current)) {
      if (resolved.items)
        current.forEach((item, i) => walk(item, resolved.items as JsonSchema, [...path, i]));
      return;
    }
    if (current === null || typeof current !== 'object') return;
    for (const [key, inner] of Object.entries(current)) {
      const own = resolved.properties?.[key] ?? patternSchema(resolved, key);
      if (own) walk(inner, own, [...path, key]);
    }
  };
  walk(value, schema, []);
  return out;
}

function patternSchema(schema: JsonSchema, key: string): JsonSchema | undefined {
  for (const [pattern, inner] of Object.entries(schema.patternProperties ?? {})) {
    if (new RegExp(pattern, 'u').test(key)) return inner;
  }
  return undefined;
}

/** A free-text string field: a string with no pattern, format, enum or const to keep. */
export function isFreeText(field: SchemaField): boolean {
  const { schema } = field;
  return (
    admits(schema, 'string') &&
    schema.pattern === undefined &&
    schema.format === undefined &&
    schema.enum === undefined &&
    schema.const === undefined
  );
}

/** A number field with a bound to test. */
export function isBoundedNumber(field: SchemaField): boolean {
  const { schema } = field;
  return (
    (admits(schema, 'integer') || admits(schema, 'number')) &&
    (typeof schema.minimum === 'number' || typeof schema.maximum === 'number')
  );
}

/** The value at `path` within `root`. */
export function getAt(root: unknown, path: JsonPath): unknown {
  let current = root;
  for (const key of path) current = (current as Record<string | number, unknown> | null)?.[key];
  return current;
}

/** Sets the value at `path` (not the root) within `root`, in place. */
export function setAt(root: unknown, path: JsonPath, value: unknown): void {
  const parent = getAt(root, path.slice(0, -1)) as Record<string | number, unknown> | null;
  const last = path[path.length - 1];
  if (parent && typeof parent === 'object' && last !== undefined) parent[last] = value;
}
