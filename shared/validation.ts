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

/**
 * Validates with every error collected (up to {@link MAX_VALUES_WITH_EVERY_ERROR_LISTED} values)
 * and the cleaned value returned; a failure becomes the 400 validation problem, keyed by the
 * PascalCase name of the offending property.
 */
export function validate<T>(schema: Joi.Schema<T>, value: unknown): T {
  const firstErrorOnly = holdsMoreValuesThan(value, MAX_VALUES_WITH_EVERY_ERROR_LISTED);
  const result = withPreferences(schema, firstErrorOnly).validate(value);
  if (!result.error) return result.value as T;
  // A Map, not an object literal: keys are the caller's property names, and one named like an
  // Object.prototype member (`__defineGetter__`) would otherwise find that member instead of a list.
  const errors = new Map<string, string[]>();
  const add = (key: string, message: string) => errors.set(key, [...(errors.get(key) ?? []), message]);
  for (const detail of result.error.details) {
    const key = fieldKey(detail.path);
    add(key, messageFor(key, detail));
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

/**
 * An account's e-mail as requests give it: at most 254 characters (RFC 5321's path limit), blanks
 * around it dropped, any top-level domain. Compared case-insensitively wherever an id is derived
 * from it (normalizeEmail).
 */
export function emailAddress(): Joi.StringSchema {
  return text({ max: 254 }).trim().email({ tlds: false });
}

/** A season: a 4-digit year as text (`"2026"`). Defaults, when any, are the caller's. */
export function seasonYear(): Joi.StringSchema {
  return text().pattern(/^\d{4}$/, { name: 'a 4-digit year' });
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
