import fc from 'fast-check';
import type Joi from 'joi';

import { COMMAND_DEFINITIONS, commandEnvelopeSchema } from '../../ingress/command/command-request';
import { importEnvelopeSchema } from '../../ingress/import/import-request';
import { allQueries, type QueryDependencies } from '../../ingress/readmodel/queries';
import { queryEnvelopeSchema as readModelEnvelopeSchema } from '../../ingress/readmodel/query-definition';
import { loadConfig } from '../../shared/config';
import { importDataSchema } from '../../shared/importers/importer';
import { IMPORTERS } from '../../shared/importers/registry';
import { characterCount, type Described, plainCheckFor } from '../../shared/validation';
import { plainCheckHeldToJoi } from '../helpers/joi-samples';
import { PROPERTY_REPLAY } from '../helpers/property-seed';

/**
 * The plain check's safety rule, held on every schema the service hands to validate() (and so to
 * plainCheckFor): whatever a plain check accepts, joi accepts too and cleans to the very same
 * value. The bodies are derived from each schema's own describe(), so a schema added to a query,
 * a command family or an importer is covered here without a line of this file changing.
 */

/** A schema as validate() receives it, named by where the service serves it. */
interface ServedSchema {
  readonly name: string;
  readonly schema: Joi.Schema;
}

/**
 * Every schema passed to validate(): the read-model envelope and each query's body
 * (readmodel.routes.ts), the command envelope and each command family's fields
 * (command-request.ts), the import envelope and each importer's importData (import-request.ts,
 * with the configured default row limit). The queries need no collaborator for their schemas.
 */
const SERVED: readonly ServedSchema[] = [
  { name: 'read-model envelope', schema: readModelEnvelopeSchema },
  ...allQueries({} as QueryDependencies).map(({ queryType, schema }) => ({ name: queryType, schema })),
  { name: 'command envelope', schema: commandEnvelopeSchema },
  ...COMMAND_DEFINITIONS.map(({ definition }) => ({
    name: definition.commandType,
    schema: definition.schema,
  })),
  { name: 'import envelope', schema: importEnvelopeSchema },
  ...[...IMPORTERS.values()].map((importer) => ({
    name: `${importer.importerType} importData`,
    schema: importDataSchema(importer, loadConfig({}).imports.maxRows),
  })),
];

type Values = fc.Arbitrary<unknown>;

/** A member left out of its object: which default joi applies, or which "is required" it answers. */
const MISSING: unique symbol = Symbol('missing');

/** Values of the wrong JSON type for any field (each schema's own type is among them for some). */
const wrongTypes: Values = fc.constantFrom(null, true, false, 0, 1.5, 'x', '', [], {}, ['x']);

/** Numbers where JSON and joi part ways: -0, past 2^53, exponents, fractions, the extremes. */
const awkwardNumbers: Values = fc.constantFrom(
  -0,
  0.5,
  -0.5,
  1e21,
  -1e21,
  2 ** 53,
  -(2 ** 53),
  2 ** 53 - 1,
  -(2 ** 53 - 1),
  2 ** 53 + 2,
  Number.MAX_VALUE,
  -Number.MAX_VALUE,
  Number.MIN_VALUE,
);

/** Strings that each string rule turns on: blanks, astral characters, lone surrogates, case that changes length. */
const awkwardStrings: Values = fc.constantFrom(
  '',
  ' ',
  '\t x \n',
  '\ud800',
  'a\udc00b',
  'x\ud83d',
  '😀',
  'İ',
  'ß',
  'x',
  'X',
  '0',
  '1',
  '2026',
);

function limitOf(rule: { readonly args?: Readonly<Record<string, unknown>> }): number | undefined {
  const limit = rule.args?.limit;
  return typeof limit === 'number' ? limit : undefined;
}

/** A regular expression as describe() writes it (`/source/flags`). */
function regexOf(text: unknown): RegExp {
  const parts = typeof text === 'string' ? /^\/(.*)\/([a-z]*)$/s.exec(text) : null;
  if (!parts) throw new Error(`Not a described regular expression: ${String(text)}`);
  return new RegExp(parts[1] as string, parts[2]);
}

/** The bounds of a number schema, within the safe integers (past them JSON numbers round). */
function numberBounds(described: Described): { integer: boolean; low: number; high: number } {
  let integer = false;
  let low = Number.MIN_SAFE_INTEGER;
  let high = Number.MAX_SAFE_INTEGER;
  for (const rule of described.rules ?? []) {
    const limit = limitOf(rule);
    if (rule.name === 'integer') integer = true;
    else if (rule.name === 'min' && limit !== undefined) low = Math.max(low, limit);
    else if (rule.name === 'max' && limit !== undefined) high = Math.min(high, limit);
  }
  return { integer, low, high };
}

/** A number schema's values in bounds (the bounds themselves, -0 where 0 is in) and near them. */
function numbersNear(described: Described): { valid: Values; off: Values } {
  const { integer, low, high } = numberBounds(described);
  const inBounds = (value: number) => value >= low && value <= high;
  const edges = [low, low + 1, high - 1, high, 0, -0, 1, -1, 100].filter(inBounds);
  const valid = fc.oneof(
    integer ? fc.integer({ min: low, max: high }) : fc.double({ min: low, max: high, noNaN: true }),
    // Small numbers near the lower bound: what clients send as skip, take and versions.
    integer
      ? fc.integer({ min: low, max: Math.min(high, low + 1000) })
      : fc.double({ min: low, max: low + 1, noNaN: true }),
    fc.constantFrom(...edges),
  );
  const off = fc.oneof(
    fc.constantFrom(low - 1, high + 1, low + 0.5, high - 0.5),
    awkwardNumbers,
    fc.constantFrom(String(low), String(high), '1', '1e3', true),
  );
  return { valid, off };
}

/** A string schema's rules, as described. */
interface StringRules {
  readonly min: number;
  readonly max: number;
  readonly casing: 'lower' | 'upper' | undefined;
  readonly trim: boolean;
  readonly patterns: readonly RegExp[];
  readonly allowed: readonly unknown[];
}

function stringRules(described: Described): StringRules {
  let min = 0;
  let max = Infinity;
  let casing: 'lower' | 'upper' | undefined;
  let trim = false;
  const patterns: RegExp[] = [];
  for (const rule of described.rules ?? []) {
    const limit = limitOf(rule);
    if (rule.name === 'minChars' && limit !== undefined) min = limit;
    else if (rule.name === 'maxChars' && limit !== undefined) max = limit;
    else if (rule.name === 'case') casing = rule.args?.direction === 'upper' ? 'upper' : 'lower';
    else if (rule.name === 'trim') trim = true;
    else if (rule.name === 'pattern') patterns.push(regexOf(rule.args?.regex));
  }
  return { min, max, casing, trim, patterns, allowed: described.allow ?? [] };
}

/**
 * Whether a string meets its rules as the service documents them: well-formed, at most `max`
 * characters as sent, and after the case and the trim, non-empty, within bounds and matching every
 * pattern (or an allowed value). Only steers the generator toward valid values; what the property
 * holds is joi's own answer.
 */
function meetsStringRules(rules: StringRules, value: unknown): boolean {
  if (rules.allowed.includes(value)) return true;
  if (typeof value !== 'string' || !value.isWellFormed() || characterCount(value) > rules.max) return false;
  let coerced =
    rules.casing === 'lower'
      ? value.toLocaleLowerCase()
      : rules.casing === 'upper'
        ? value.toLocaleUpperCase()
        : value;
  if (rules.trim) coerced = coerced.trim();
  if (rules.allowed.includes(coerced)) return true;
  const count = characterCount(coerced);
  return (
    coerced !== '' &&
    count >= rules.min &&
    count <= rules.max &&
    rules.patterns.every((pattern) => pattern.test(coerced))
  );
}

/** Characters that count differently: one astral emoji is two UTF-16 units, `İ` lower-cases to two. */
const characters = fc.constantFrom('x', 'Y', '7', ' ', 'é', '😀', 'İ', 'ß', '-');

/** A string schema's values: matching its patterns, at its bounds, in either case, blank-padded, and beyond. */
function stringsNear(described: Described): { valid: Values; off: Values } {
  const rules = stringRules(described);
  const { min, max, patterns, allowed } = rules;
  // Long enough to reach every bound the service sets (1024 for passwords), short enough to stay quick.
  const longest = Number.isFinite(max) ? max : min + 20;
  const lengths = [min - 1, min, min + 1, longest - 1, longest, longest + 1].filter((length) => length >= 0);
  const candidates = fc.oneof(
    ...patterns.map((pattern) =>
      fc.stringMatching(pattern, Number.isFinite(max) ? { maxLength: max + 1 } : {}),
    ),
    fc.string({ unit: characters, minLength: min, maxLength: Math.min(longest, min + 20) }),
    fc
      .constantFrom(...lengths)
      .chain((length) =>
        fc.constantFrom('x'.repeat(length), '😀'.repeat(length), 'İ'.repeat(length), 'x'.padStart(length)),
      ),
    awkwardStrings,
    ...(allowed.length > 0 ? [fc.constantFrom(...allowed)] : []),
  );
  // Each candidate also as clients vary it: the other case, blanks around it.
  const varied = fc
    .tuple(candidates, fc.constantFrom('as is', 'upper', 'lower', 'padded'))
    .map(([value, how]) => {
      if (typeof value !== 'string' || how === 'as is') return value;
      if (how === 'upper') return value.toUpperCase();
      if (how === 'lower') return value.toLowerCase();
      return ` ${value}\t`;
    });
  // Just past each bound: one character too many or too few, and blanks that take a value over
  // its bound as sent though it is within it once trimmed.
  const pastBounds = [
    ...(min > 0 ? ['x'.repeat(min - 1), '😀'.repeat(min - 1), ' '.repeat(min)] : []),
    ...(Number.isFinite(max)
      ? [
          'x'.repeat(max + 1),
          '😀'.repeat(max + 1),
          'x'.padStart(max + 1),
          'x'.padEnd(max + 1),
          ` ${'x'.repeat(max)}`,
        ]
      : []),
  ];
  return {
    valid: varied.filter((value) => meetsStringRules(rules, value)),
    off: fc.oneof(
      varied,
      ...(pastBounds.length > 0 ? [fc.constantFrom(...pastBounds)] : []),
      awkwardStrings,
      fc.string({ unit: 'binary', maxLength: 8 }),
      awkwardNumbers,
    ),
  };
}

/** A `.valid(...)` schema's values: exactly them, and look-alikes in the other case or with blanks. */
function onlyNear(described: Described): { valid: Values; off: Values } {
  const allowed = described.allow ?? [];
  const valid = allowed.length > 0 ? fc.constantFrom(...allowed) : fc.constant('x');
  const off = fc.oneof(
    valid.map((value) => (typeof value === 'string' ? value.toLowerCase() : value)),
    valid.map((value) => (typeof value === 'string' ? value.toUpperCase() : value)),
    valid.map((value) => (typeof value === 'string' ? ` ${value}` : value)),
    awkwardStrings,
  );
  return { valid, off };
}

/** Member names no schema declares: look-alikes of its own in another case, and prototype names. */
function extraNamesFor(names: readonly string[]): fc.Arbitrary<string> {
  const lookAlikes = names.flatMap((name) => [
    name.toUpperCase(),
    name.charAt(0).toUpperCase() + name.slice(1),
  ]);
  return fc.constantFrom(
    'extra',
    '__proto__',
    'constructor',
    'toString',
    '',
    ...lookAlikes.filter((name) => !names.includes(name)),
  );
}

/**
 * An object schema's values: every member valid (an optional one now and then left out, for its
 * default), or exactly one change: a member off, of a wrong type or missing, or an extra member.
 * One change at a time keeps about half the bodies valid however many members a schema has, and
 * puts each change alone in front of the plain check. A keyless `Joi.object()` takes any JSON object.
 */
function objectsNear(described: Described): { valid: Values; off: Values } {
  const notAnObject = fc.oneof(
    wrongTypes,
    awkwardStrings,
    fc.array(fc.jsonValue({ maxDepth: 1 }), { maxLength: 2 }),
  );
  if (described.keys === undefined) {
    const memberNames = fc.oneof(fc.string({ maxLength: 4 }), fc.constantFrom('__proto__', 'constructor'));
    const anyObject = fc
      .array(fc.tuple(memberNames, fc.jsonValue({ maxDepth: 2 })), { maxLength: 3 })
      .map((entries) => objectOf(entries));
    return { valid: anyObject, off: notAnObject };
  }
  const members = Object.entries(described.keys);
  const validMembers = fc.tuple(
    ...members.map(([name, member]) => {
      const { valid } = valuesNear(member);
      const values =
        member.flags?.presence === 'required'
          ? valid
          : fc.oneof({ weight: 3, arbitrary: valid }, { weight: 1, arbitrary: fc.constant(MISSING) });
      return values.map((value) => [name, value] as const);
    }),
  );
  const oneMemberChanged = members.map(([name, member], index) =>
    fc
      .tuple(validMembers, fc.oneof(valuesNear(member).off, wrongTypes, fc.constant(MISSING)))
      .map(([entries, value]) =>
        objectOf(entries.map((entry, at) => (at === index ? [name, value] : entry))),
      ),
  );
  const names = members.map(([name]) => name);
  const extraMember = fc
    .tuple(validMembers, extraNamesFor(names), fc.oneof(wrongTypes, awkwardStrings))
    .map(([entries, name, value]) => objectOf([...entries, [name, value]]));
  return {
    valid: validMembers.map((entries) => objectOf(entries)),
    off: fc.oneof(...oneMemberChanged, extraMember, notAnObject),
  };
}

/**
 * An object with any member names as its own (`__proto__` too, as JSON.parse makes it); the body
 * reaches the schema only after the JSON round trip in {@link parsedBody}.
 */
function objectOf(entries: readonly (readonly [string, unknown])[]): Record<string, unknown> {
  const object = Object.create(null) as Record<string, unknown>;
  for (const [name, value] of entries) if (value !== MISSING) object[name] = value;
  return object;
}

const near = new WeakMap<Described, { valid: Values; off: Values }>();

/** Values valid for a described schema, and values just off it, read from the description alone. */
function valuesNear(described: Described): { valid: Values; off: Values } {
  let values = near.get(described);
  if (!values) {
    if (described.type === 'object') values = objectsNear(described);
    else if (described.type === 'number') values = numbersNear(described);
    else if (described.type === 'string' && described.flags?.only === true) values = onlyNear(described);
    else if (described.type === 'string') values = stringsNear(described);
    else values = { valid: fc.jsonValue({ maxDepth: 1 }), off: wrongTypes };
    near.set(described, values);
  }
  return values;
}

/** Bodies near a schema: as many valid as with one change (some changes still valid: a -0, an upper-case GUID). */
function bodiesNear(schema: Joi.Schema): fc.Arbitrary<unknown> {
  const { valid, off } = valuesNear(schema.describe() as Described);
  return fc.oneof(valid, off).map(parsedBody);
}

/** JSON text as a client may send it: JSON.stringify writes -0 as 0, a client can write `-0`. */
function jsonText(value: unknown): string {
  if (typeof value === 'number') return Object.is(value, -0) ? '-0' : JSON.stringify(value);
  if (Array.isArray(value)) return `[${value.map(jsonText).join(',')}]`;
  if (value !== null && typeof value === 'object') {
    const object = value as Record<string, unknown>;
    return `{${Object.keys(object)
      .map((name) => `${JSON.stringify(name)}:${jsonText(object[name])}`)
      .join(',')}}`;
  }
  return JSON.stringify(value);
}

/** The body as the endpoint sees it: what JSON.parse makes of its text. */
function parsedBody(value: unknown): unknown {
  return JSON.parse(jsonText(value)) as unknown;
}

/** Bodies per schema: ~20 schemas in well under 20 s. */
const RUNS_PER_SCHEMA = 5_000;
/** The share of bodies each plain check must accept: below it, the generator is not making valid bodies. */
const LEAST_ACCEPTED_SHARE = 0.3;

describe('the plain check of every schema the service serves', () => {
  it('When a body near any served schema passes its plain check, then joi accepts it too and cleans it to the same value', () => {
    const withPlainCheck = SERVED.filter(({ schema }) => plainCheckFor(schema) !== null);
    const accepted = new Map<string, number>();

    for (const { name, schema } of withPlainCheck) {
      let count = 0;
      fc.assert(
        fc.property(bodiesNear(schema), (body) => {
          if (plainCheckHeldToJoi(schema, body, name)) count += 1;
        }),
        { numRuns: RUNS_PER_SCHEMA },
      );
      accepted.set(name, count);
    }

    console.info(
      `Plain checks held to joi (${PROPERTY_REPLAY}): ${accepted.size} of ${SERVED.length} served schemas\n` +
        [...accepted].map(([name, count]) => `  ${name}: ${count}/${RUNS_PER_SCHEMA} accepted`).join('\n'),
    );
    // Not vacuous: every schema with a plain check was exercised, each on a good share of valid bodies.
    const exercised = [...accepted].filter(([, count]) => count >= LEAST_ACCEPTED_SHARE * RUNS_PER_SCHEMA);
    expect(exercised.map(([name]) => name)).toStrictEqual(withPlainCheck.map(({ name }) => name));
    expect(exercised.length).toBeGreaterThan(0);
  });
});
