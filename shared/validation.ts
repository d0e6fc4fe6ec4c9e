import Joi from 'joi';

import { validationError, type FieldErrors } from './errors';

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

/** Messages in the spec's style: "Id is required". Used by every request schema. */
export const VALIDATION_MESSAGES: Joi.LanguageMessages = {
  'any.required': '{{#label}} is required',
  'any.invalid': '{{#label}} is invalid',
  'any.only': '{{#label}} must be one of: {{#valids}}',
  'string.base': '{{#label}} must be a string',
  'string.empty': '{{#label}} is required',
  'string.guid': '{{#label}} must be a GUID',
  'number.base': '{{#label}} must be a number',
  'number.integer': '{{#label}} must be an integer',
  'number.min': '{{#label}} must be at least {{#limit}}',
  'number.max': '{{#label}} must be at most {{#limit}}',
  'object.base': '{{#label}} must be an object',
  'object.unknown': '{{#label}} is not allowed',
  'array.base': '{{#label}} must be an array',
  'boolean.base': '{{#label}} must be true or false',
};

const prepared = new WeakMap<Joi.Schema, Joi.Schema>();

/**
 * The schema with our preferences applied, made once per schema: passing them to every
 * validate() call makes joi re-compile its message templates each time (most of a request's CPU).
 */
function withPreferences(schema: Joi.Schema): Joi.Schema {
  let ready = prepared.get(schema);
  if (!ready) {
    ready = schema.prefs({
      abortEarly: false,
      convert: true,
      errors: { wrap: { label: false } },
      messages: VALIDATION_MESSAGES,
    });
    prepared.set(schema, ready);
  }
  return ready;
}

/**
 * Validates with every error collected and the cleaned value returned; a failure becomes the
 * 400 validation problem, keyed by the PascalCase name of the offending property.
 */
export function validate<T>(schema: Joi.Schema<T>, value: unknown): T {
  const result = withPreferences(schema).validate(value);
  if (!result.error) return result.value as T;
  const errors: FieldErrors = {};
  for (const detail of result.error.details) {
    const key = fieldKey(detail.path);
    (errors[key] ??= []).push(detail.message.replace(/^"?[^"\s]+"? /, `${key} `));
  }
  throw validationError(errors);
}

/** The spec's text for a requestId (or any GUID field) that is not a GUID (section 7, rule 1). */
export const GUID_FORMAT_MESSAGE = 'The JSON value is not in a supported Guid format.';

const GUID_PATTERN = /^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$/;

/** A GUID of any version (8-4-4-4-12 hex), accepted in any case and answered in lower case. */
export function guid(): Joi.StringSchema {
  return Joi.string()
    .pattern(GUID_PATTERN)
    .lowercase()
    .messages({ 'string.pattern.base': '{{#label}} must be a GUID' });
}

/** A season: a 4-digit year as text (`"2026"`). Defaults, when any, are the caller's. */
export function seasonYear(): Joi.StringSchema {
  return Joi.string()
    .pattern(/^\d{4}$/)
    .messages({ 'string.pattern.base': '{{#label}} must be a 4-digit year' });
}

export function isGuid(value: unknown): value is string {
  return typeof value === 'string' && GUID_PATTERN.test(value);
}

/** A JSON number that is a whole number within +/-2^53: a long beyond that is refused, never rounded. */
export function long(): Joi.NumberSchema {
  return Joi.number()
    .strict()
    .integer()
    .messages({ 'number.unsafe': '{{#label}} is beyond the supported range' });
}
