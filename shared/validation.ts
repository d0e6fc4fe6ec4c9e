import Joi from 'joi';

import { type FieldErrors, validationError } from './errors';

/** PascalCase of a property name: the spec names fields that way in `errors` (`Id`). */
export function fieldLabel(name: string): string {
  return name.charAt(0).toUpperCase() + name.slice(1);
}

/** Envelope members whose own name the spec leaves out of error keys (`query.id` is `Id`). */
const CONTAINERS = new Set(['query', 'command', 'importData']);

/** `['importData', 'users', 3, 'email']` -> `Users[3].Email`; `['query', 'id']` -> `Id`. */
export function fieldKey(path: readonly (string | number)[]): string {
  const parts = path.length > 1 && CONTAINERS.has(String(path[0])) ? path.slice(1) : path;
  if (parts.length === 0) return '$';
  return parts
    .map((part) => (typeof part === 'number' ? `[${part}]` : `.${fieldLabel(part)}`))
    .join('')
    .replace(/^\./, '');
}

/**
 * Messages in the spec's style: "Id is required". Used by every request schema, and where the
 * request fields' wording belongs: a field schema with messages of its own (`.messages()`) makes
 * joi merge preferences and compile templates for that field on every validation (three such
 * fields: 6 us per validation in a microbenchmark, 2.5 us without). Field kinds that need their
 * own wording use a named rule (`pattern(re, {name})`).
 */
export const VALIDATION_MESSAGES: Joi.LanguageMessages = {
  'any.required': '{{#label}} is required',
  'any.invalid': '{{#label}} is invalid',
  'any.only': '{{#label}} must be one of: {{#valids}}',
  'string.base': '{{#label}} must be a string',
  // An empty (or, where trimmed, blank) string was sent: not the same as a missing member.
  'string.empty': '{{#label}} must not be empty',
  'string.wellFormed': '{{#label}} must be well-formed Unicode text (it holds a lone UTF-16 surrogate)',
  'string.guid': '{{#label}} must be a GUID',
  // Named patterns say what they expect (`guid()`: "must be a GUID", `seasonYear()`: "must be a 4-digit year").
  'string.pattern.name': '{{#label}} must be {{#name}}',
  'number.base': '{{#label}} must be a number',
  'number.integer': '{{#label}} must be an integer',
  'number.min': '{{#label}} must be at least {{#limit}}',
  'number.max': '{{#label}} must be at most {{#limit}}',
  // Beyond +/-2^53 (a long the spec allows but JSON numbers here cannot hold exactly): refused, never rounded.
  'number.unsafe': '{{#label}} is beyond the supported range',
  'object.base': '{{#label}} must be an object',
  'object.unknown': '{{#label}} is not allowed',
  // `.xor(a, b)`: neither or both of the peers sent (GetUser's id and email).
  'object.missing': '{{#label}} must hold exactly one of {{#peers}}',
  'object.xor': '{{#label}} must hold exactly one of {{#peers}}',
  'array.base': '{{#label}} must be an array',
  'boolean.base': '{{#label}} must be true or false',
};

/**
 * Above this many values (object members and array items, at any depth) a body is checked up to
 * its first error only. joi lists every error of a body, at about a kilobyte each: an importData of
 * 200,000 unknown members, or 10,000 rows with a dozen wrong fields each, took seconds and
 * hundreds of megabytes and, past ~125,000 errors in one object or array, overflowed joi's stack
 * (a 500). A valid body passes either way; a UserSeeding batch of about 2,000 rows still has every
 * error listed.
 */
export const MAX_VALUES_WITH_EVERY_ERROR_LISTED = 20_000;

const prepared = new Map<boolean, WeakMap<Joi.Schema, Joi.Schema>>([
  [false, new WeakMap()],
  [true, new WeakMap()],
]);

/**
 * The schema with our preferences applied, made once per schema: passing them to every
 * validate() call makes joi re-compile its message templates each time (most of a request's CPU).
 */
function withPreferences(schema: Joi.Schema, abortEarly: boolean): Joi.Schema {
  const cache = prepared.get(abortEarly) as WeakMap<Joi.Schema, Joi.Schema>;
  let ready = cache.get(schema);
  if (!ready) {
    ready = schema.prefs({
      abortEarly,
      convert: true,
      errors: { wrap: { label: false } },
      messages: VALIDATION_MESSAGES,
    });
    cache.set(schema, ready);
  }
  return ready;
}

/** Whether `root` holds more than `limit` values; walks without recursion (nesting may be deep). */
function holdsMoreValuesThan(root: unknown, limit: number): boolean {
  let count = 0;
  const pending: unknown[] = [root];
  while (pending.length) {
    const node = pending.pop();
    if (node === null || typeof node !== 'object') continue;
    const children: unknown[] = Array.isArray(node) ? node : Object.values(node);
    count += children.length;
    if (count > limit) return true;
    for (const child of children) if (child !== null && typeof child === 'object') pending.push(child);
  }
  return false;
}

/*
 * The plain check, from here to validate(). It exists for CPU alone: the bodies clients send most
 * are accepted by a check derived from the schema's own describe(), with joi's answer, and never
 * reach joi; it saves about a tenth of a request's ingress CPU (`npm run bench:plain-check`). Why
 * it stays, and when to remove it: docs/adr/0024-what-a-library-already-does.md. Without it,
 * validate() is validateWithJoi(), with the same answers.
 */

/** What a plain check returns for a body it leaves to joi. */
const LEFT_TO_JOI: unique symbol = Symbol('left to joi');

/** A check that either accepts a value, returning what joi would return for it, or leaves it to joi. */
type PlainCheck = (value: unknown) => unknown;

/** A joi schema's description, as describe() gives it (the members a plain check reads). */
export interface Described {
  readonly type?: string;
  readonly flags?: Readonly<Record<string, unknown>>;
  readonly keys?: Readonly<Record<string, Described>>;
  readonly allow?: readonly unknown[];
  readonly rules?: readonly { readonly name: string; readonly args?: Readonly<Record<string, unknown>> }[];
  readonly preferences?: Readonly<Record<string, unknown>>;
  readonly metas?: readonly unknown[];
}

/** A JSON object (what JSON.parse makes): no array, no class instance, no null. */
export function isPlainObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && Object.getPrototypeOf(value) === Object.prototype;
}

/**
 * What only documents a schema (the OpenAPI document reads them): a `.description()` flag and
 * `.meta()` entries. joi's validation never reads either.
 */
const DOCUMENTATION_FLAGS = ['description'];

/** Whether `object` has members other than `allowed` (each a member a plain check understands). */
function hasOtherThan(object: object, allowed: readonly string[]): boolean {
  return Object.keys(object).some((member) => !allowed.includes(member));
}

/** A default the plain check can give as it is: a constant number, string or null. */
type Fallback = number | string | null;

/** A key's presence flag and default, or undefined when the plain check cannot honour them. */
function presenceOf(
  described: Described,
): { required: boolean; hasFallback: boolean; fallback: Fallback } | undefined {
  const flags = described.flags ?? {};
  const { presence } = flags;
  if (presence !== undefined && presence !== 'required' && presence !== 'optional') return undefined;
  const hasFallback = Object.hasOwn(flags, 'default');
  const fallback = flags.default;
  if (hasFallback && fallback !== null && typeof fallback !== 'number' && typeof fallback !== 'string')
    return undefined;
  return {
    required: presence === 'required',
    hasFallback,
    fallback: hasFallback ? (fallback as Fallback) : null,
  };
}

/**
 * Whether the schema's flags are among `allowed` (presence and default are the object's to honour;
 * documentation changes nothing).
 */
function flagsWithin(described: Described, allowed: readonly string[]): boolean {
  return !hasOtherThan(described.flags ?? {}, ['presence', ...DOCUMENTATION_FLAGS, ...allowed]);
}

/**
 * The plain check of a number schema: `.strict().integer().min().max()` at most, with constant
 * limits; what joi's number type, rules and -0 normalisation do to a JSON number.
 */
function plainNumber(described: Described): PlainCheck | undefined {
  if (hasOtherThan(described, ['type', 'flags', 'rules', 'preferences', 'metas'])) return undefined;
  if (!flagsWithin(described, ['default'])) return undefined;
  const preferences = described.preferences ?? {};
  if (Object.keys(preferences).length !== 1 || preferences.convert !== false) return undefined;
  let integer = false;
  let min = -Infinity;
  let max = Infinity;
  for (const rule of described.rules ?? []) {
    const limit = rule.args?.limit;
    if (rule.name === 'integer' && rule.args === undefined) integer = true;
    else if (rule.name === 'min' && typeof limit === 'number') min = Math.max(min, limit);
    else if (rule.name === 'max' && typeof limit === 'number') max = Math.min(max, limit);
    else return undefined;
  }
  return (value) =>
    typeof value === 'number' &&
    Number.isFinite(value) &&
    value <= Number.MAX_SAFE_INTEGER &&
    value >= Number.MIN_SAFE_INTEGER &&
    (!integer || Number.isInteger(value)) &&
    value >= min &&
    value <= max
      ? value === 0
        ? 0
        : value
      : LEFT_TO_JOI;
}

/** The plain check of `.valid(...strings)` (only those values, matched exactly): the value itself. */
function plainOnly(described: Described): PlainCheck | undefined {
  if (hasOtherThan(described, ['type', 'flags', 'allow', 'metas']) || !flagsWithin(described, ['only']))
    return undefined;
  if (described.flags?.only !== true) return undefined;
  const allowed = described.allow ?? [];
  if (!allowed.every((value) => typeof value === 'string')) return undefined;
  const valid = new Set(allowed);
  return (value) => (typeof value === 'string' && valid.has(value) ? value : LEFT_TO_JOI);
}

/**
 * The plain check of an object: of known keys (no unknown member, no rule, no renaming), or of no
 * keys at all (`Joi.object()`, any members: joi answers the very object).
 */
function plainObject(described: Described): PlainCheck | undefined {
  if (hasOtherThan(described, ['type', 'flags', 'keys', 'metas']) || !flagsWithin(described, []))
    return undefined;
  if (described.keys === undefined) return (value) => (isPlainObject(value) ? value : LEFT_TO_JOI);
  const members: {
    name: string;
    check: PlainCheck;
    required: boolean;
    hasFallback: boolean;
    fallback: Fallback;
  }[] = [];
  for (const [name, member] of Object.entries(described.keys)) {
    const presence = presenceOf(member);
    const check = presence && plainCheckOf(member);
    if (!presence || !check) return undefined;
    members.push({ name, check, ...presence });
  }
  const known = new Set(members.map(({ name }) => name));
  return (value) => {
    if (!isPlainObject(value)) return LEFT_TO_JOI;
    for (const name of Object.keys(value)) if (!known.has(name)) return LEFT_TO_JOI;
    const result: Record<string, unknown> = {};
    for (const name of Object.keys(value)) result[name] = value[name];
    for (const { name, check, required, hasFallback, fallback } of members) {
      if (!Object.hasOwn(value, name)) {
        if (required) return LEFT_TO_JOI;
        if (hasFallback) result[name] = fallback;
        continue;
      }
      const checked = check(value[name]);
      if (checked === LEFT_TO_JOI) return LEFT_TO_JOI;
      result[name] = checked;
    }
    return result;
  };
}

/** A regular expression as describe() writes it (`/source/flags`), or undefined. */
function regexOf(text: unknown): RegExp | undefined {
  if (typeof text !== 'string') return undefined;
  const parts = /^\/(.*)\/([dimsuv]*)$/s.exec(text);
  if (!parts) return undefined;
  try {
    const regex = new RegExp(parts[1] as string, parts[2]);
    // Only if it reads back as written: the same pattern, not a look-alike.
    return String(regex) === text ? regex : undefined;
  } catch {
    return undefined;
  }
}

/**
 * The plain check of a string schema: the service's `text()` and `guid()` (text rules counted in
 * characters, named patterns, lower or upper case, trimming), with `.allow()` of null and strings
 * and constant defaults. What joi does to a JSON string, in its order: the text() bound on the
 * value as sent (its `prepare`), the case and the trim (joi's coercion, on with `convert`), the
 * allowed values (answered as they are), then the type (a non-empty string; text() refuses
 * ill-formed UTF-16, so every string passed here must be well-formed, whichever joi made it) and
 * the rules on the coerced value. Any other rule, flag or option: no plain check.
 */
function plainString(described: Described): PlainCheck | undefined {
  if (
    hasOtherThan(described, ['type', 'flags', 'rules', 'allow', 'metas']) ||
    !flagsWithin(described, ['default'])
  )
    return undefined;
  const allowed = described.allow ?? [];
  if (!allowed.every((value) => value === null || typeof value === 'string')) return undefined;
  const valid = new Set(allowed);
  let min = 0;
  let max = Infinity;
  let casing: 'lower' | 'upper' | undefined;
  let trim = false;
  const patterns: RegExp[] = [];
  for (const { name, args = {} } of described.rules ?? []) {
    const { limit } = args;
    if (name === 'minChars' && Number.isSafeInteger(limit)) min = Math.max(min, limit as number);
    else if (name === 'maxChars' && Number.isSafeInteger(limit)) max = Math.min(max, limit as number);
    else if (name === 'case' && (args.direction === 'lower' || args.direction === 'upper'))
      casing = args.direction;
    else if (name === 'trim' && args.enabled === true) trim = true;
    else if (name === 'pattern' && !hasOtherThan(args, ['regex', 'options'])) {
      const regex = regexOf(args.regex);
      const options = (args.options ?? {}) as Record<string, unknown>;
      if (!regex || hasOtherThan(options, ['name']) || /[gy]/.test(regex.flags)) return undefined;
      patterns.push(regex);
    } else return undefined;
  }
  return (value) => {
    if (value === null) return valid.has(null) ? null : LEFT_TO_JOI;
    if (typeof value !== 'string') return LEFT_TO_JOI;
    // text()'s prepare refuses a value over its bound as sent (trimming would hide it).
    if (max !== Infinity && characterCount(value, max) > max) return LEFT_TO_JOI;
    let coerced =
      casing === 'lower' ? value.toLocaleLowerCase() : casing === 'upper' ? value.toLocaleUpperCase() : value;
    if (trim) coerced = coerced.trim();
    if (valid.has(coerced)) return coerced;
    if (coerced === '' || !coerced.isWellFormed()) return LEFT_TO_JOI;
    if (min > 0 && characterCount(coerced, min) < min) return LEFT_TO_JOI;
    if (max !== Infinity && characterCount(coerced, max) > max) return LEFT_TO_JOI;
    for (const regex of patterns) if (!regex.test(coerced)) return LEFT_TO_JOI;
    return coerced;
  };
}

function plainCheckOf(described: Described): PlainCheck | undefined {
  if (described.type === 'object') return plainObject(described);
  if (described.type === 'number') return plainNumber(described);
  if (described.type === 'string')
    return described.flags?.only === true ? plainOnly(described) : plainString(described);
  return undefined;
}

const plainChecks = new WeakMap<Joi.Schema, PlainCheck | null>();

/** The schema's description; nothing (so no plain check, joi alone) if joi cannot describe it. */
function describedOrNothing(schema: Joi.Schema): Described {
  try {
    return schema.describe() as Described;
  } catch {
    return {};
  }
}

/**
 * A plain check derived from the schema's own description, for schemas made only of what it
 * understands (objects of known keys, `.valid()` strings, `text()` and `guid()` strings, strict
 * integers with constant bounds, constant defaults); null for any other. It only ever accepts: a
 * value it does not pass, however slightly off, goes to joi, which words every error. A property
 * test holds every value it accepts to joi's own answer.
 */
export function plainCheckFor(schema: Joi.Schema): PlainCheck | null {
  let check = plainChecks.get(schema);
  if (check === undefined) {
    check = plainCheckOf(describedOrNothing(schema)) ?? null;
    plainChecks.set(schema, check);
  }
  return check;
}

/** {@link plainCheckFor}'s answer for a value it leaves to joi. */
export function isLeftToJoi(checked: unknown): checked is typeof LEFT_TO_JOI {
  return checked === LEFT_TO_JOI;
}

/**
 * Validates with every error collected (up to {@link MAX_VALUES_WITH_EVERY_ERROR_LISTED} values)
 * and the cleaned value returned; a failure becomes the 400 validation problem, keyed by the
 * PascalCase name of the offending property.
 */
export function validate<T>(schema: Joi.Schema<T>, value: unknown): T {
  const plain = plainCheckFor(schema)?.(value);
  if (plain !== undefined && !isLeftToJoi(plain)) return plain as T;
  return validateWithJoi(schema, value);
}

/** {@link validate} by joi alone, without the plain check: what the plain check is held to. */
export function validateWithJoi<T>(schema: Joi.Schema<T>, value: unknown): T {
  const firstErrorOnly = holdsMoreValuesThan(value, MAX_VALUES_WITH_EVERY_ERROR_LISTED);
  const result = withPreferences(schema, firstErrorOnly).validate(value);
  if (!result.error) return result.value as T;
  // A Map, not an object literal: keys are the caller's property names, and one named like an
  // Object.prototype member (`__defineGetter__`) would otherwise find that member instead of a list.
  const errors = new Map<string, string[]>();
  const add = (key: string, message: string) => errors.set(key, [...(errors.get(key) ?? []), message]);
  for (const detail of result.error.details) {
    const key = fieldKey(detail.path);
    add(key, misplacedEnvelopeMember(schema, detail) ?? messageFor(key, detail));
  }
  if (firstErrorOnly) {
    add(
      '$',
      `The body holds more than ${MAX_VALUES_WITH_EVERY_ERROR_LISTED} values: only its first error is listed.`,
    );
  }
  const fieldErrors: FieldErrors = Object.fromEntries(errors);
  throw validationError(fieldErrors);
}

/** The members of each schema's top level (the envelope: `skip`, `take`...), read once per schema. */
const envelopeMembers = new WeakMap<Joi.Schema, ReadonlySet<string>>();

/**
 * For a member the body put in its container (`query`, `command`) that belongs beside it, on the
 * envelope (`take` inside `query`), the message that says so: `Take is not allowed in query: send it
 * beside query, as a member of the request body`. Undefined for any other error.
 */
function misplacedEnvelopeMember(schema: Joi.Schema, detail: Joi.ValidationErrorItem): string | undefined {
  const [container, member] = detail.path;
  if (detail.type !== 'object.unknown' || detail.path.length !== 2 || typeof member !== 'string')
    return undefined;
  if (typeof container !== 'string' || !CONTAINERS.has(container)) return undefined;
  let members = envelopeMembers.get(schema);
  if (!members) {
    // describedOrNothing: a schema joi cannot describe must not turn this 400 into a throw.
    members = new Set(Object.keys(describedOrNothing(schema).keys ?? {}));
    envelopeMembers.set(schema, members);
  }
  if (!members.has(member) || member === container) return undefined;
  const label = fieldLabel(member);
  return `${label} is not allowed in ${container}: send it beside ${container}, as a member of the request body`;
}

/**
 * joi's message begins with the property's own name (its label); the spec's begins with the
 * field key (`Id is required`). The label is cut by its length, not by a pattern: a caller's
 * property name may hold blanks, quotes or `$'`, which a pattern or a replacement string would misread.
 */
function messageFor(key: string, detail: Joi.ValidationErrorItem): string {
  const label = detail.context?.label;
  return typeof label === 'string' && detail.message.startsWith(label)
    ? `${key}${detail.message.slice(label.length)}`
    : detail.message;
}

/** The number of characters (Unicode code points) of `value`, as JSON Schema's minLength/maxLength count. */
export function characterCount(value: string, stopAfter = Infinity): number {
  let count = 0;
  // for..of walks code points: a surrogate pair (an emoji) is one character, not two UTF-16 units.
  for (const _ of value) if (++count > stopAfter) break;
  return count;
}

const lengthLimit = {
  name: 'limit',
  assert: (limit: unknown) => Number.isSafeInteger(limit) && (limit as number) >= 0,
  message: 'must be a non-negative integer',
};

/**
 * joi with the service's string rules. Its strings refuse ill-formed UTF-16 (a lone surrogate:
 * JSON may carry one as `"\ud800"`, and deriving an id from it, as uuid v5 does through
 * encodeURIComponent, throws), and count lengths in characters with `minChars`/`maxChars`, as the
 * OpenAPI document's minLength/maxLength do: joi's own min/max count UTF-16 units, so a name of 51
 * emoji was "longer than 100" and a password of 6 astral characters "at least 8".
 */
// joi types extend() as any: the result is a Root whose string() has the rules below (TextSchema).
const TextJoi = Joi.extend((joi: Joi.Root) => ({
  type: 'string',
  base: joi.string(),
  messages: {
    'string.wellFormed': VALIDATION_MESSAGES['string.wellFormed'] as string,
  },
  // The document's maxLength bounds the string as sent. joi trims (a schema's .trim()) before its
  // rules run, so 201 blanks would pass a bound of 200 as an empty string: the bound is checked on
  // the value as sent first.
  prepare(value: unknown, helpers: Joi.CustomHelpers) {
    const limit = (helpers.schema.$_getRule('maxChars') as { args: { limit: number } } | undefined)?.args
      .limit;
    if (typeof value !== 'string' || limit === undefined) return undefined;
    // Only what trimming would hide: any other excess is the rules' to word, in their order.
    if (characterCount(value, limit) > limit && characterCount(value.trim(), limit) <= limit) {
      return { value, errors: [helpers.error('string.max', { limit, value })] };
    }
    return undefined;
  },
  validate(value: unknown, helpers: Joi.CustomHelpers) {
    if (typeof value === 'string' && !value.isWellFormed()) {
      return { value, errors: [helpers.error('string.wellFormed')] };
    }
    return undefined;
  },
  rules: {
    minChars: {
      method(this: Joi.StringSchema, limit: number) {
        return this.$_addRule({ name: 'minChars', args: { limit } });
      },
      args: [lengthLimit],
      validate(value: string, helpers: Joi.CustomHelpers, { limit }: { limit: number }) {
        // The same code as joi's own rule, so the messages stay "length must be at least N characters long".
        return characterCount(value, limit) >= limit ? value : helpers.error('string.min', { limit, value });
      },
    },
    maxChars: {
      method(this: Joi.StringSchema, limit: number) {
        return this.$_addRule({ name: 'maxChars', args: { limit } });
      },
      args: [lengthLimit],
      validate(value: string, helpers: Joi.CustomHelpers, { limit }: { limit: number }) {
        return characterCount(value, limit) <= limit ? value : helpers.error('string.max', { limit, value });
      },
    },
  },
})) as Joi.Root;

/** What text() returns: a joi string with the character-counting rules. */
export interface TextSchema extends Joi.StringSchema {
  minChars(limit: number): this;
  maxChars(limit: number): this;
}

/**
 * The one way a request field is a string: well-formed Unicode only, with its length bounds (if
 * any) in characters (code points), documented as minLength/maxLength. Joi.string()'s min/max
 * are not used in request schemas (the OpenAPI generator refuses them).
 */
export function text(
  bounds: { readonly min?: number; readonly max?: number; readonly notBlank?: boolean } = {},
): TextSchema {
  let schema = TextJoi.string() as TextSchema;
  if (bounds.min !== undefined) schema = schema.minChars(bounds.min);
  if (bounds.max !== undefined) schema = schema.maxChars(bounds.max);
  // Documents (as `pattern: "\\S"`) that a value of blanks alone is refused: with .trim(), joi
  // refuses it as empty before this pattern is reached, so the pattern is the document's half.
  if (bounds.notBlank) schema = schema.pattern(/\S/, { name: 'text with a character other than blanks' });
  return schema;
}

/** The spec's text for a requestId (or any GUID field) that is not a GUID (section 7, rule 1). */
export const GUID_FORMAT_MESSAGE = 'The JSON value is not in a supported Guid format.';

const GUID_PATTERN = /^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$/;

/** A GUID of any version (8-4-4-4-12 hex), accepted in any case and answered in lower case (documented as format uuid). */
export function guid(): Joi.StringSchema {
  return text().pattern(GUID_PATTERN, { name: 'a GUID' }).lowercase().meta({ format: 'uuid' });
}

const EMAIL_MAX_CHARS = 254;

/** A character of an atom of the local part: RFC 5321's atext, or any non-ASCII (RFC 6531). */
const LOCAL_CHAR = String.raw`[^\x00-\x20"(),.:;<>@[\\\]\x7F]`;
/** A letter or digit, or a non-ASCII character (an internationalised label). */
const LABEL_END = String.raw`[^\x00-\x2F\x3A-\x40\x5B-\x60\x7B-\x7F]`;
const LABEL_INNER = String.raw`[^\x00-\x2C\x2E\x2F\x3A-\x40\x5B-\x60\x7B-\x7F]{0,61}`;
/** The top-level label opens with a letter (or a non-ASCII character). */
const TLD_START = String.raw`[^\x00-\x40\x5B-\x60\x7B-\x7F]`;

/**
 * What {@link emailAddress} accepts, as the OpenAPI document says it (`pattern`, not `format:
 * email`, which allows a domain without a dot, quoted local parts and IP literals): blanks around
 * it, a dot-atom local part of at most 64 characters, and a domain of two labels or more of at most
 * 63 characters each, letters, digits and inner hyphens, the last opening with a letter. joi
 * checks non-ASCII addresses further (the local part's 64 bytes in UTF-8, the domain's IDNA form).
 */
export const EMAIL_PATTERN =
  String.raw`^\s*(?=[^@]{1,64}@)${LOCAL_CHAR}+(?:\.${LOCAL_CHAR}+)*@` +
  `(?:${LABEL_END}(?:${LABEL_INNER}${LABEL_END})?\\.)+` +
  `${TLD_START}(?:${LABEL_INNER}${LABEL_END})?` +
  String.raw`\s*$`;

/**
 * An account's e-mail as requests give it: at most 254 characters (RFC 5321's path limit), blanks
 * around it dropped, any top-level domain, a dot in the domain. Compared case-insensitively wherever
 * an id is derived from it (normalizeEmail). Documented by {@link EMAIL_PATTERN}.
 */
export function emailAddress(): Joi.StringSchema {
  return text({ max: EMAIL_MAX_CHARS }).trim().email({ tlds: false }).meta({ pattern: EMAIL_PATTERN });
}

const EMAIL_ADDRESS = emailAddress();

/**
 * Whether `value`, as received and unvalidated, is an e-mail {@link emailAddress} takes. Text far
 * longer than it allows is refused by its length alone (at most two UTF-16 units a character), so
 * checking a megabyte of it costs nothing.
 */
export function isEmailAddress(value: unknown): value is string {
  return (
    typeof value === 'string' &&
    value.trim().length <= 2 * EMAIL_MAX_CHARS &&
    EMAIL_ADDRESS.validate(value).error === undefined
  );
}

const SEASON_PATTERN = /^\d{4}$/;

/** A season: a 4-digit year as text (`"2026"`). Defaults, when any, are the caller's. */
export function seasonYear(): Joi.StringSchema {
  return text().pattern(SEASON_PATTERN, { name: 'a 4-digit year' });
}

/** Whether `value`, as received and unvalidated, is a season {@link seasonYear} takes. */
export function isSeasonYear(value: unknown): value is string {
  return typeof value === 'string' && SEASON_PATTERN.test(value);
}

export function isGuid(value: unknown): value is string {
  return typeof value === 'string' && GUID_PATTERN.test(value);
}

/**
 * A JSON number that is a whole number within +/-2^53: a long beyond that is refused, never rounded.
 * The meta documents it as an int64 with that range (joi refuses unsafe numbers without a rule).
 */
export function long(): Joi.NumberSchema {
  return Joi.number()
    .strict()
    .integer()
    .meta({ format: 'int64', minimum: -Number.MAX_SAFE_INTEGER, maximum: Number.MAX_SAFE_INTEGER });
}

/**
 * An array of at most `max` items whose length is checked BEFORE its items. joi checks every item
 * of an over-long array as well: a roster of 300,000 `{}` in a 1 MB command took 20 s and ended in
 * a stack overflow (a 500), a million roles in an import 15 s and 1.5 GB. Past the limit, only the
 * length is reported (in `tooLong`'s words when given).
 */
export function boundedArray(item: Joi.Schema, max: number, tooLong?: string): Joi.ArraySchema {
  const lengthRule = Joi.array().max(max);
  // The message applies to this array's limit alone; .messages() would reach the arrays inside it.
  const checked = tooLong === undefined ? lengthRule : lengthRule.rule({ message: tooLong });
  return checked.when(Joi.array().max(max), { then: Joi.array().items(item) });
}
