import fc from 'fast-check';
import type Joi from 'joi';

import { AppError } from '../../shared/errors';
import { guid, isLeftToJoi, plainCheckFor, text, validate, validateWithJoi } from '../../shared/validation';

/*
 * Valid-looking values drawn from a joi schema's own description, so the hostile properties start
 * from bodies a registered query, command or importer accepts, and a new one is covered without a
 * line of test code. It knows the rules this service's schemas use (GUID and year patterns, e-mail,
 * bounds, allowed values); a rule it does not know gives a value the schema may refuse, which only
 * makes that property shallower (test/property checks that most samples pass).
 */

/** What `schema.describe()` tells, as far as the samples use it. */
export interface Description {
  readonly type?: string;
  /** Conditional parts (`when`): their `then` is folded in, as the likely case of a valid value. */
  readonly whens?: readonly { readonly then?: Description }[];
  readonly flags?: { readonly presence?: string; readonly only?: boolean; readonly default?: unknown };
  readonly allow?: readonly unknown[];
  readonly rules?: readonly { readonly name: string; readonly args?: Record<string, unknown> }[];
  readonly keys?: Readonly<Record<string, Description>>;
  readonly items?: readonly Description[];
  /**
   * Rules across an object's members: `.xor(a, b)` (exactly one of the peers), `.with(key, peers)`
   * (the peers present whenever the key is).
   */
  readonly dependencies?: readonly {
    readonly rel: string;
    readonly key?: string;
    readonly peers?: readonly string[];
  }[];
}

/** The pattern of the service's one GUID rule, as describe() writes it: how a GUID field is known. */
export const GUID_PATTERN_TEXT = (guid().describe() as Description).rules?.find(
  (rule) => rule.name === 'pattern',
)?.args?.regex;
const NOT_BLANK_PATTERN_TEXT = (text({ notBlank: true }).describe() as Description).rules?.find(
  (rule) => rule.name === 'pattern',
)?.args?.regex;
const MAX_SAMPLE_ITEMS = 3;

function numericArg(description: Description, rule: string): number | undefined {
  const limit = description.rules?.find((candidate) => candidate.name === rule)?.args?.limit;
  return typeof limit === 'number' ? limit : undefined;
}

function regexOf(text: string): RegExp {
  const match = /^\/(.*)\/([a-z]*)$/s.exec(text);
  return match ? new RegExp(match[1] ?? '', match[2]) : new RegExp(text);
}

function stringSample(description: Description): fc.Arbitrary<unknown> {
  const rules = description.rules ?? [];
  const pattern = rules.find((rule) => rule.name === 'pattern')?.args?.regex;
  // text({ notBlank }) documents /\S/: the plain samples below always hold a letter.
  if (typeof pattern === 'string' && pattern !== NOT_BLANK_PATTERN_TEXT) {
    return pattern === GUID_PATTERN_TEXT ? fc.uuid() : fc.stringMatching(regexOf(pattern));
  }
  if (rules.some((rule) => rule.name === 'email')) {
    return fc.emailAddress().filter((email) => email.length <= 254);
  }
  if (rules.some((rule) => rule.name === 'guid')) return fc.uuid();
  // text()'s character bounds (minChars/maxChars): the samples are ASCII, so characters are units.
  const min = Math.max(1, numericArg(description, 'minChars') ?? 1);
  const max = Math.max(min, Math.min(numericArg(description, 'maxChars') ?? 24, 24));
  return fc.stringMatching(new RegExp(`^[A-Za-z0-9][A-Za-z0-9 ]{${min - 1},${max - 1}}$`)).map((text) => {
    const trimmed = text.trimEnd();
    return trimmed.length >= min ? trimmed : text.replaceAll(' ', 'x');
  });
}

function numberSample(description: Description): fc.Arbitrary<unknown> {
  const min = numericArg(description, 'min') ?? numericArg(description, 'greater') ?? 0;
  // A bound that refers to another field (round <= finalRound) is met most surely at the minimum.
  const boundByReference = description.rules?.some(
    (rule) => rule.name === 'max' && !numericArg(description, 'max'),
  );
  const max = boundByReference
    ? min
    : (numericArg(description, 'max') ?? numericArg(description, 'less') ?? 1_000_000);
  if (description.rules?.some((rule) => rule.name === 'integer')) {
    return fc.integer({ min: Math.ceil(min), max: Math.max(Math.ceil(min), Math.floor(max)) });
  }
  return fc.double({ min, max: Math.max(min, max), noNaN: true, noDefaultInfinity: true });
}

/**
 * The description with the `then` of each `when` folded in: boundedArray() puts an array's items
 * there, and a field required only in some case (a service account's password) is then always given.
 */
export function withWhensFolded(description: Description): Description {
  return (description.whens ?? []).reduce<Description>((folded, { then }) => {
    if (!then) return folded;
    return {
      ...folded,
      flags: { ...folded.flags, ...then.flags },
      rules: [...(folded.rules ?? []), ...(then.rules ?? [])],
      keys: folded.keys || then.keys ? { ...folded.keys, ...then.keys } : undefined,
      items: then.items ?? folded.items,
    };
  }, description);
}

/** An arbitrary of values `described` (from `schema.describe()`) is likely to accept. */
export function sampleOf(described: Description): fc.Arbitrary<unknown> {
  const description = withWhensFolded(described);
  if (description.flags?.only && description.allow?.length) {
    return fc.constantFrom(...description.allow.filter((value) => value !== null));
  }
  switch (description.type) {
    case 'object': {
      const entries = Object.entries(description.keys ?? {}).filter(
        ([, child]) => child.flags?.presence !== 'forbidden',
      );
      // `.xor(a, b)`: each peer is drawn, then all but one (drawn too) dropped.
      const xorGroups = (description.dependencies ?? [])
        .filter((dependency) => dependency.rel === 'xor')
        .map((dependency) => dependency.peers ?? []);
      const inXorGroup = new Set(xorGroups.flat());
      const members = entries.map(([key, child]) => {
        const value = sampleOf(child);
        return child.flags?.presence === 'required' || inXorGroup.has(key)
          ? value.map((sample) => [key, sample] as const)
          : fc.option(
              value.map((sample) => [key, sample] as const),
              { nil: undefined },
            );
      });
      // `.with(key, peers)`: a key drawn without all its peers is dropped.
      const withRules = (description.dependencies ?? []).filter((dependency) => dependency.rel === 'with');
      const kept = fc.tuple(...xorGroups.map((peers) => fc.constantFrom(...peers)));
      return fc.tuple(fc.tuple(...members), kept).map(([pairs, keptPeers]) => {
        const sample: Record<string, unknown> = Object.fromEntries(
          pairs.filter(
            (pair): pair is readonly [string, unknown] =>
              pair !== undefined && (!inXorGroup.has(pair[0]) || keptPeers.includes(pair[0])),
          ),
        );
        for (const { key, peers = [] } of withRules) {
          if (key !== undefined && peers.some((peer) => !(peer in sample))) delete sample[key];
        }
        return sample;
      });
    }
    case 'array': {
      const [item] = description.items ?? [];
      const minLength = numericArg(description, 'min') ?? 0;
      const maxLength = Math.max(
        minLength,
        Math.min(numericArg(description, 'max') ?? MAX_SAMPLE_ITEMS, MAX_SAMPLE_ITEMS),
      );
      return fc.array(item ? sampleOf(item) : fc.constant(null), { minLength, maxLength });
    }
    case 'string':
      return stringSample(description);
    case 'number':
      return numberSample(description);
    case 'boolean':
      return fc.boolean();
    default:
      return fc.constant(null);
  }
}

/** Samples for a joi schema. */
export function samplesFor(schema: Joi.Schema): fc.Arbitrary<unknown> {
  return sampleOf(schema.describe());
}

/** A member's place in a body: keys and array indexes. */
export type FieldPath = (string | number)[];

/** Paths of every field of `schema` whose description passes `test` (array items at index 0). */
export function fieldPaths(schema: Joi.Schema, test: (description: Description) => boolean): FieldPath[] {
  const paths: FieldPath[] = [];
  const walk = (described: Description, path: FieldPath) => {
    const description = withWhensFolded(described);
    if (path.length && test(description)) paths.push(path);
    for (const [key, child] of Object.entries(description.keys ?? {})) walk(child, [...path, key]);
    const [item] = description.items ?? [];
    if (item) walk(item, [...path, 0]);
  };
  walk(schema.describe(), []);
  return paths;
}

export function valueAt(value: unknown, path: FieldPath): unknown {
  let node = value;
  for (const part of path) {
    if (node === null || typeof node !== 'object' || !(part in node)) return undefined;
    node = (node as Record<string | number, unknown>)[part];
  }
  return node;
}

/** A copy of `value` with the member at `path` (which must exist) set to `replacement`. */
export function withValueAt(value: unknown, path: FieldPath, replacement: unknown): unknown {
  const copy = structuredClone(value) as Record<string | number, unknown>;
  let node = copy;
  path.slice(0, -1).forEach((part) => (node = node[part] as Record<string | number, unknown>));
  node[path[path.length - 1] as string | number] = replacement;
  return copy;
}

/** Samples of `schema` that it accepts and that hold a value at `path`. */
export function validSamplesWith(schema: Joi.Schema, path: FieldPath): fc.Arbitrary<unknown> {
  return samplesFor(schema).filter((sample) => {
    if (valueAt(sample, path) === undefined) return false;
    try {
      validate(schema, sample);
      return true;
    } catch {
      return false;
    }
  });
}

/** joi's answer: the cleaned value, or the 400's field errors (what the plain check is held to). */
function joiAnswer(schema: Joi.Schema, value: unknown): { value: unknown } | { errors: unknown } {
  try {
    return { value: validateWithJoi(schema, value) };
  } catch (error) {
    if (error instanceof AppError) return { errors: error.details.errors };
    throw error;
  }
}

/**
 * Runs `schema`'s plain check on `body` and, when it accepts it, holds joi to the same answer: joi
 * accepts it too and cleans it to a strictly equal value (`name`, when given, says which schema
 * failed). True when the plain check accepted the body, false when it left it to joi.
 */
export function plainCheckHeldToJoi(schema: Joi.Schema, body: unknown, name?: string): boolean {
  const check = plainCheckFor(schema);
  if (check === null) throw new Error(`${name ?? 'the schema'} has no plain check`);
  const plain = check(body);
  if (isLeftToJoi(plain)) return false;
  expect({ schema: name, answer: joiAnswer(schema, body) }).toStrictEqual({
    schema: name,
    answer: { value: plain },
  });
  return true;
}
