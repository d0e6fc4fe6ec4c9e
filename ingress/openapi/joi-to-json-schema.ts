import type Joi from 'joi';

import type { JsonSchema, JsonType } from '../http/json-schema';

/**
 * joi's `describe()` output, as far as this converter reads it. joi types it as `any`, so the
 * shape we rely on is written down here.
 */
interface Described {
  readonly type: string;
  readonly flags?: Readonly<Record<string, unknown>>;
  readonly allow?: readonly unknown[];
  readonly invalid?: readonly unknown[];
  readonly rules?: readonly { readonly name: string; readonly args?: Readonly<Record<string, unknown>> }[];
  readonly keys?: Readonly<Record<string, Described>>;
  readonly patterns?: readonly { readonly regex?: string; readonly rule: Described }[];
  readonly items?: readonly Described[];
  readonly matches?: readonly { readonly schema?: Described }[];
  readonly whens?: readonly When[];
  readonly metas?: readonly Readonly<Record<string, unknown>>[];
  readonly examples?: readonly unknown[];
  readonly preferences?: Readonly<Record<string, unknown>>;
  /** Rules across an object's members (`.xor(a, b)`, `.with(...)`...). */
  readonly dependencies?: readonly {
    readonly rel: string;
    readonly key?: string | null;
    readonly peers?: readonly string[];
  }[];
}

/** A field-level `.when('sibling', { is, then, otherwise })`. */
interface When {
  readonly ref?: { readonly path: readonly string[]; readonly ancestor?: number };
  readonly is?: Described;
  readonly then?: Described;
  readonly otherwise?: Described;
}

/** Flags that change what a value may be are converted; these only change messages or casting. */
const FLAGS_WITHOUT_SCHEMA_MEANING = new Set(['label', 'error']);
const HANDLED_FLAGS = new Set(['presence', 'default', 'only', 'description', 'unknown']);
/** Preferences that do not change which values are valid (conversion and messages). */
const PREFERENCES_WITHOUT_SCHEMA_MEANING = new Set(['convert', 'messages', 'errors', 'abortEarly']);

const STRING_FORMATS: Readonly<Record<string, string>> = {
  guid: 'uuid',
  isoDate: 'date-time',
  uri: 'uri',
};

/**
 * Converts a joi schema into the JSON Schema (2020-12) it enforces, from `schema.describe()`. It
 * throws, naming the path, on any joi feature it does not know, so a new schema fails the
 * document's generation instead of being documented wrongly. Conversions and casts (`trim`,
 * `lowercase`, string-to-number) constrain nothing a caller sends, so they are left out; a default
 * is said in the description. Why not the joi-to-json package: ADR 0011.
 */
export function joiToJsonSchema(schema: Joi.Schema): JsonSchema {
  return convert(schema.describe() as Described, '$');
}

function convert(raw: Described, path: string): JsonSchema {
  const described = withImpliedConditionsFolded(raw, path);
  checkFlagsAndPreferences(described, path);
  if (described.whens?.length) {
    throw unsupported(path, 'a condition (.when) on a value that is not an object member');
  }
  const base = convertType(described, path);
  return finish(described, base, path);
}

function convertType(described: Described, path: string): Record<string, unknown> {
  switch (described.type) {
    case 'any':
      return {};
    case 'boolean':
      return { type: 'boolean' };
    case 'string':
      return stringSchema(described, path);
    case 'number':
      return numberSchema(described, path);
    case 'array':
      return arraySchema(described, path);
    case 'object':
      return objectSchema(described, path);
    case 'alternatives':
      return alternativesSchema(described, path);
    default:
      throw unsupported(path, `the joi type "${described.type}"`);
  }
}

function stringSchema(described: Described, path: string): Record<string, unknown> {
  const schema: Record<string, unknown> = { type: 'string' };
  for (const { name, args = {} } of described.rules ?? []) {
    switch (name) {
      // text()'s rules count characters (code points), as minLength/maxLength do.
      case 'minChars':
        schema.minLength = limit(args, path, name);
        break;
      case 'maxChars':
        schema.maxLength = limit(args, path, name);
        break;
      case 'min':
      case 'max':
      case 'length':
        // joi's own length rules count UTF-16 units: 51 emoji would be "longer than 100".
        throw unsupported(
          path,
          `the string rule "${name}" (it counts UTF-16 units, the document counts characters: use text({ min, max }) from shared/validation.ts)`,
        );
      case 'pattern': {
        const options = args.options as { invert?: boolean } | undefined;
        if (options?.invert) throw unsupported(path, 'an inverted pattern');
        schema.pattern = regexSource(String(args.regex), path);
        break;
      }
      case 'trim':
      case 'case':
        break; // conversions of what was sent, not constraints on it
      case 'email':
        // `format: email` accepts what joi refuses (`someone@example`): the schema carries the
        // pattern of what it accepts instead (emailAddress() in shared/validation.ts).
        if (!described.metas?.some((meta) => typeof meta.pattern === 'string')) {
          throw unsupported(path, 'email() without the pattern meta of emailAddress()');
        }
        break;
      default: {
        const format = STRING_FORMATS[name];
        if (!format) throw unsupported(path, `the string rule "${name}"`);
        schema.format = format;
      }
    }
  }
  return schema;
}

function numberSchema(described: Described, path: string): Record<string, unknown> {
  const schema: Record<string, unknown> = { type: 'number' };
  const notes: string[] = [];
  const bound = (keyword: string, args: Readonly<Record<string, unknown>>, phrase: string) => {
    const value = args.limit;
    if (typeof value === 'number') schema[keyword] = value;
    else notes.push(`${phrase} \`${referencedName(value, path)}\``);
  };
  for (const { name, args = {} } of described.rules ?? []) {
    switch (name) {
      case 'integer':
        schema.type = 'integer';
        break;
      case 'min':
        bound('minimum', args, 'At least');
        break;
      case 'max':
        bound('maximum', args, 'At most');
        break;
      case 'greater':
        bound('exclusiveMinimum', args, 'Greater than');
        break;
      case 'less':
        bound('exclusiveMaximum', args, 'Less than');
        break;
      default:
        throw unsupported(path, `the number rule "${name}"`);
    }
  }
  // A limit set by another member (round <= finalRound) has no JSON Schema keyword: say it in words.
  if (notes.length) schema.description = `${notes.join('; ')}.`;
  // joi refuses a number beyond +/-(2^53 - 1) unless it is .unsafe() ("... is beyond the supported
  // range"): a limit like any other, so the document states it where no tighter one is set.
  if (described.flags?.unsafe !== true) {
    if (schema.maximum === undefined && schema.exclusiveMaximum === undefined) {
      schema.maximum = Number.MAX_SAFE_INTEGER;
    }
    if (schema.minimum === undefined && schema.exclusiveMinimum === undefined) {
      schema.minimum = -Number.MAX_SAFE_INTEGER;
    }
  }
  return schema;
}

function arraySchema(described: Described, path: string): Record<string, unknown> {
  const schema: Record<string, unknown> = { type: 'array' };
  const items = (described.items ?? []).map((item, i) => convert(item, `${path}[${i}]`));
  if (items.length === 1) schema.items = items[0];
  else if (items.length > 1) schema.items = { anyOf: items };
  for (const { name, args = {} } of described.rules ?? []) {
    switch (name) {
      case 'min':
        schema.minItems = limit(args, path, name);
        break;
      case 'max':
        schema.maxItems = limit(args, path, name);
        break;
      case 'length':
        schema.minItems = schema.maxItems = limit(args, path, name);
        break;
      case 'unique':
        schema.uniqueItems = true;
        break;
      default:
        throw unsupported(path, `the array rule "${name}"`);
    }
  }
  return schema;
}

function objectSchema(described: Described, path: string): Record<string, unknown> {
  if (described.rules?.length) throw unsupported(path, `the object rule "${described.rules[0]?.name}"`);
  const schema: Record<string, unknown> = { type: 'object' };
  const keys = described.keys;
  const patterns = described.patterns ?? [];
  // Joi.object() without keys takes any members; with keys (even none) or patterns, only those.
  if (keys === undefined && patterns.length === 0) return schema;

  const properties: Record<string, JsonSchema | false> = {};
  const required: string[] = [];
  const conditions: JsonSchema[] = [];
  for (const [name, rawMember] of Object.entries(keys ?? {})) {
    const memberPath = `${path}.${name}`;
    const member = withImpliedConditionsFolded(rawMember, memberPath);
    const presence = member.flags?.presence;
    if (presence === 'forbidden') {
      properties[name] = false;
      continue;
    }
    if (presence === 'required') required.push(name);
    conditions.push(...(member.whens ?? []).map((when) => siblingCondition(name, when, memberPath)));
    properties[name] = convert({ ...member, whens: [] }, memberPath);
  }
  if (keys !== undefined) schema.properties = properties;
  if (required.length) schema.required = required;
  if (patterns.length) {
    schema.patternProperties = Object.fromEntries(
      patterns.map((pattern, i) => {
        if (pattern.regex === undefined) throw unsupported(path, 'a member pattern given by a schema');
        return [regexSource(pattern.regex, path), convert(pattern.rule, `${path}[pattern ${i}]`)];
      }),
    );
  }
  if (described.flags?.unknown !== true) schema.additionalProperties = false;
  if (conditions.length) schema.allOf = conditions;
  Object.assign(schema, memberRules(described, path));
  return schema;
}

/**
 * The object's member rules: `.xor(a, b, ...)`, exactly one of the peers, as `oneOf` of each peer
 * required (a body with two of them matches two branches, one with none matches no branch), at most
 * one; `.with(key, peers)`, the peers required whenever the key is sent, as `dependentRequired`.
 * Other member rules are refused.
 */
function memberRules(
  described: Described,
  path: string,
): { oneOf?: JsonSchema[]; dependentRequired?: Record<string, string[]> } {
  const dependencies = described.dependencies ?? [];
  const refused = () =>
    unsupported(path, `the member rule "${dependencies.map((rule) => rule.rel).join(', ')}"`);
  const rules: { oneOf?: JsonSchema[]; dependentRequired?: Record<string, string[]> } = {};
  for (const dependency of dependencies) {
    const peers = dependency.peers ?? [];
    if (dependency.rel === 'xor' && peers.length && !rules.oneOf) {
      rules.oneOf = peers.map((peer) => ({ required: [peer] }));
    } else if (dependency.rel === 'with' && typeof dependency.key === 'string' && peers.length) {
      rules.dependentRequired = { ...rules.dependentRequired, [dependency.key]: [...peers] };
    } else {
      throw refused();
    }
  }
  return rules;
}

/**
 * A condition on the value itself whose test the value's own rules already imply, as
 * boundedArray()'s `.max(n).when(Joi.array().max(n), { then: items })` (the items are checked only
 * once the length is): every valid value passes the test, so its branch always applies and is
 * folded in. Other conditions are left for the callers, which convert or refuse them.
 */
function withImpliedConditionsFolded(described: Described, path: string): Described {
  const remaining: When[] = [];
  let folded = described;
  for (const when of described.whens ?? []) {
    if (when.ref || !when.is || !when.then || when.otherwise || !isImpliedBy(when.is, described)) {
      remaining.push(when);
      continue;
    }
    const { type, items, rules, ...more } = when.then;
    if (type !== described.type || Object.keys(more).length) {
      throw unsupported(path, 'a condition on the value itself whose branch adds more than items and rules');
    }
    folded = { ...folded, items: items ?? folded.items, rules: [...(folded.rules ?? []), ...(rules ?? [])] };
  }
  return { ...folded, whens: remaining };
}

/** True when `test` only repeats rules `described` has (same name and arguments). */
function isImpliedBy(test: Described, described: Described): boolean {
  const { type, rules = [], ...more } = test;
  if (type !== described.type || Object.keys(more).length) return false;
  const own = new Set((described.rules ?? []).map(({ name, args }) => JSON.stringify({ name, args })));
  return rules.every(({ name, args }) => own.has(JSON.stringify({ name, args })));
}

/**
 * `password: ... .when('userType', { is: 'ServiceAccount', then: Joi.required() })` becomes, on
 * the object, `if userType is ServiceAccount then password is required` (and `otherwise` likewise).
 */
function siblingCondition(member: string, when: When, path: string): JsonSchema {
  const sibling = when.ref?.path;
  if (!sibling || sibling.length !== 1 || (when.ref?.ancestor ?? 1) !== 1 || !when.is) {
    throw unsupported(path, 'a condition on anything but a sibling member');
  }
  const [siblingName] = sibling as [string];
  const values = (when.is.allow ?? []).filter((value) => !isOverride(value));
  if (!when.is.flags?.only || values.length === 0) {
    throw unsupported(path, 'a condition other than "is one of these values"');
  }
  const condition: Record<string, unknown> = {
    if: {
      properties: { [siblingName]: values.length === 1 ? { const: values[0] } : { enum: values } },
      required: [siblingName],
    },
  };
  if (when.then) condition.then = presenceOnly(member, when.then, path);
  if (when.otherwise) condition.else = presenceOnly(member, when.otherwise, path);
  return condition;
}

/** The branch of a condition, when all it changes is whether the member is required or allowed. */
function presenceOnly(member: string, branch: Described, path: string): JsonSchema {
  const { presence, ...otherFlags } = branch.flags ?? {};
  if (branch.type !== 'any' || Object.keys(otherFlags).length || branch.rules?.length) {
    throw unsupported(path, 'a condition whose branch changes more than presence');
  }
  if (presence === 'required') return { required: [member] };
  if (presence === 'forbidden') return { not: { required: [member] } };
  return {};
}

function alternativesSchema(described: Described, path: string): Record<string, unknown> {
  const mode = described.flags?.match;
  const options = (described.matches ?? []).map((match, i) => {
    if (!match.schema) throw unsupported(path, 'a conditional alternative');
    return convert(match.schema, `${path}|${i}`);
  });
  return { [mode === 'one' ? 'oneOf' : 'anyOf']: options };
}

/** Applies what every type shares: allowed values, default, description, examples, metas. */
function finish(described: Described, base: Record<string, unknown>, path: string): JsonSchema {
  const schema = { ...base };
  const flags = described.flags ?? {};
  const allowed = (described.allow ?? []).filter((value) => !isOverride(value));
  if (described.invalid?.length) throw unsupported(path, 'invalid() values');

  if (flags.only) {
    if (allowed.includes(null)) schema.type = withNull(schema.type);
    if (allowed.length === 1) schema.const = allowed[0];
    else schema.enum = allowed;
  } else {
    const extras = allowed.filter((value) => value !== null);
    if (allowed.includes(null)) schema.type = withNull(schema.type);
    for (const extra of extras) {
      const emptyStringAlreadyValid =
        extra === '' && schema.type !== undefined && schema.minLength === undefined && !schema.pattern;
      if (!emptyStringAlreadyValid) throw unsupported(path, `allow(${JSON.stringify(extra)})`);
    }
  }

  const description = [flags.description, schema.description, defaultText(flags.default)]
    .filter(Boolean)
    .join(' ');
  if (description) schema.description = description;
  if (described.examples?.length) schema.examples = described.examples;
  // Metas fill in what the rules leave open: long()'s safe range yields to its own .min(1).
  for (const meta of described.metas ?? []) {
    for (const [keyword, value] of Object.entries(meta)) if (!(keyword in schema)) schema[keyword] = value;
  }
  return schema;
}

/**
 * A default is said in words, not as the `default` keyword: these are request schemas, named
 * components, and openapi-typescript under its default settings (`defaultNonNullable`) makes every
 * member of a component that has a `default` required, so a caller would have to send what the
 * server fills in (`skip`, `expectedVersion`, `priority`, ...). Only `required` decides.
 */
function defaultText(value: unknown): string | undefined {
  if (value === undefined || typeof value === 'function') return undefined;
  return `Default: \`${JSON.stringify(value)}\`.`;
}

function checkFlagsAndPreferences(described: Described, path: string): void {
  for (const flag of Object.keys(described.flags ?? {})) {
    if (flag === 'match' && described.type === 'alternatives') continue;
    if (!HANDLED_FLAGS.has(flag) && !FLAGS_WITHOUT_SCHEMA_MEANING.has(flag)) {
      throw unsupported(path, `the flag "${flag}"`);
    }
  }
  for (const preference of Object.keys(described.preferences ?? {})) {
    if (!PREFERENCES_WITHOUT_SCHEMA_MEANING.has(preference)) {
      throw unsupported(path, `the preference "${preference}"`);
    }
  }
}

function withNull(type: unknown): JsonType | JsonType[] | undefined {
  if (type === undefined) return undefined;
  const types = (Array.isArray(type) ? type : [type]) as JsonType[];
  return types.includes('null') ? types : [...types, 'null'];
}

function limit(args: Readonly<Record<string, unknown>>, path: string, rule: string): number {
  if (typeof args.limit !== 'number') throw unsupported(path, `a ${rule} limit that is not a number`);
  return args.limit;
}

/** The member a `Joi.ref('finalRound')` limit names. */
function referencedName(value: unknown, path: string): string {
  const ref = (value as { ref?: { path?: readonly string[] } } | undefined)?.ref;
  if (!ref?.path?.length) throw unsupported(path, 'a limit that is neither a number nor a reference');
  return ref.path.join('.');
}

/** `/^\d{4}$/` as joi describes it -> `^\d{4}$`; flags (i, m, ...) have no JSON Schema form. */
function regexSource(described: string, path: string): string {
  const match = /^\/(.*)\/([a-z]*)$/s.exec(described);
  if (!match) throw unsupported(path, `the pattern ${described}`);
  if (match[2]) throw unsupported(path, `the regular expression flags "${match[2]}"`);
  return match[1] ?? '';
}

function isOverride(value: unknown): boolean {
  return typeof value === 'object' && value !== null && (value as { override?: unknown }).override === true;
}

function unsupported(path: string, what: string): Error {
  return new Error(
    `joiToJsonSchema: ${path} uses ${what}, which has no conversion yet; ` +
      'teach ingress/openapi/joi-to-json-schema.ts (and its unit test) how to document it',
  );
}
