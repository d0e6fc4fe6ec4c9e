import { characterCount, isGuid } from '../validation';

/**
 * Checks for a command's plainest valid form, taken before joi (ADR 0022's command path): joi
 * costs a command about a tenth of its ingress CPU, most of it spent learning that a three-field
 * object is valid. Each check here accepts only values its field's joi schema accepts, and answers
 * what joi would have made of them; anything else (an error to word, a form it is unsure of) is
 * undefined, and the body goes to joi as before. So the schema stays the one source of truth for
 * every refusal and every message; test/property/plain-command.property.test.ts holds each check
 * to it over generated bodies.
 */

/** Undefined: not the plain form; the caller falls back to joi. */
export type Plain<T> = T | undefined;

/** A JSON object (what JSON.parse makes): no array, no class instance, no null. */
export function isPlainObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && Object.getPrototypeOf(value) === Object.prototype;
}

/** Whether every own member of `value` is one of `allowed` (joi refuses unknown members). */
export function hasOnlyMembers(value: Record<string, unknown>, allowed: readonly string[]): boolean {
  for (const member in value) {
    if (!allowed.includes(member)) return false;
  }
  return true;
}

/** guid(): a GUID string of any case, answered in lower case. */
export function plainGuid(value: unknown): Plain<string> {
  return isGuid(value) ? value.toLowerCase() : undefined;
}

/**
 * long() (and a strict integer with a lower bound): a whole JSON number within +/-2^53, at least
 * `min`. -0 is left to joi, which answers it as 0.
 */
export function plainLong(value: unknown, min = -Number.MAX_SAFE_INTEGER): Plain<number> {
  return Number.isSafeInteger(value) && (value as number) >= min && !Object.is(value, -0)
    ? (value as number)
    : undefined;
}

/**
 * text({ max }).allow(null, '').default(null): absent or null is null, '' is '', and a
 * well-formed string of at most `max` characters is itself.
 */
export function plainOptionalText(value: unknown, max: number): Plain<string | null> {
  if (value === undefined || value === null) return null;
  if (typeof value !== 'string') return undefined;
  return value.isWellFormed() && characterCount(value, max) <= max ? value : undefined;
}
