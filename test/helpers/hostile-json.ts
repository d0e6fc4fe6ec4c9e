import fc from 'fast-check';

/**
 * Arbitraries for hostile request bodies, and the JSON text writer they need.
 *
 * Bodies are trees of plain values whose objects have a null prototype, so a key `__proto__` is an
 * own property like any other (on an ordinary object, assigning it would replace the prototype)
 * and is written into the JSON text. Leaves that JSON.stringify cannot write are {@link RawJson}:
 * integers beyond 2^53 (it would round them), `1e400`, `-0`, nesting deeper than its stack.
 */
export class RawJson {
  constructor(readonly text: string) {}
}

export type HostileValue = null | boolean | number | string | RawJson | HostileArray | HostileObject;
export type HostileArray = HostileValue[];
export interface HostileObject {
  [key: string]: HostileValue;
}

/** An object that takes any key as its own, `__proto__` included. */
export function hostileObject(entries: Iterable<readonly [string, HostileValue]> = []): HostileObject {
  const object = Object.create(null) as HostileObject;
  for (const [key, value] of entries) object[key] = value;
  return object;
}

/** The JSON text of a body, with raw leaves written as they are. */
export function toJsonText(value: HostileValue): string {
  if (value instanceof RawJson) return value.text;
  if (Array.isArray(value)) return `[${value.map(toJsonText).join(',')}]`;
  if (value !== null && typeof value === 'object') {
    return `{${Object.keys(value)
      .map((key) => `${JSON.stringify(key)}:${toJsonText(value[key] ?? null)}`)
      .join(',')}}`;
  }
  return JSON.stringify(value);
}

/** A copy of a plain JSON-like value (a valid body, say) as a hostile tree that mutations may edit. */
export function toHostile(value: unknown): HostileValue {
  if (value instanceof RawJson) return value;
  if (Array.isArray(value)) return value.map(toHostile);
  if (value !== null && typeof value === 'object') {
    return hostileObject(Object.entries(value).map(([key, inner]) => [key, toHostile(inner)]));
  }
  if (value === undefined) return null;
  return value as HostileValue;
}

/** Names that an object inherits from Object.prototype, and the classic pollution vectors. */
export const PROTOTYPE_KEYS = [
  '__proto__',
  'constructor',
  'prototype',
  '__defineGetter__',
  '__defineSetter__',
  '__lookupGetter__',
  '__lookupSetter__',
  'hasOwnProperty',
  'isPrototypeOf',
  'propertyIsEnumerable',
  'toString',
  'toLocaleString',
  'valueOf',
] as const;

/** Bodies that try to reach Object.prototype through `__proto__` or `constructor.prototype`. */
export const POLLUTION_ATTEMPTS = [
  '{"__proto__":{"polluted":"yes"}}',
  '{"constructor":{"prototype":{"polluted":"yes"}}}',
  '{"__proto__":{"__proto__":{"polluted":"yes"}}}',
  '{"__proto__":{"toString":"polluted","valueOf":1}}',
  '[{"__proto__":{"polluted":"yes"}}]',
].map((text) => new RawJson(text));

/** Numbers a careless parser or schema gets wrong; as JSON text, since most need it. */
export const ODD_NUMBER_TEXTS = [
  '9007199254740993', // 2^53 + 1: JSON.parse rounds it to 2^53
  '9007199254740992', // 2^53, the first integer past Number.MAX_SAFE_INTEGER
  '-9007199254740993',
  '9223372036854775807', // a .NET long's maximum
  '9223372036854775808', // one beyond it
  '18446744073709551616',
  '123456789012345678901234567890',
  '1e400', // Infinity once parsed
  '-1e400',
  '1e-400', // 0 once parsed
  '-0',
  '0',
  '-1',
  '0.5',
  '1.5',
  '-2.25',
  '1.0',
  '1E2',
  '0.1e1',
  '2147483648', // an int32 overflow
  '-2147483649',
] as const;

/** A string key: prototype names, blanks, dots, brackets, `$` patterns, unicode, long ones. */
export const hostileKey: fc.Arbitrary<string> = fc.oneof(
  { weight: 3, arbitrary: fc.constantFrom(...PROTOTYPE_KEYS) },
  { weight: 2, arbitrary: fc.string({ maxLength: 12 }) },
  { weight: 1, arbitrary: fc.string({ unit: 'binary', maxLength: 8 }) },
  {
    weight: 1,
    arbitrary: fc.constantFrom('a b', "x$'y", '$&', 'a.b', 'a[0]', '', ' ', '\u0000', 'id', 'Id'),
  },
  { weight: 1, arbitrary: fc.integer({ min: 200, max: 5_000 }).map((length) => 'k'.repeat(length)) },
);

/** Long strings of one awkward character: NUL, RTL override, a lone surrogate, quotes, emoji. */
export const hugeString: fc.Arbitrary<string> = fc
  .tuple(
    fc.constantFrom('a', 'é', '😀', '\u0000', '\u202e', '\ud800', '"', '\\', ' ', '\n'),
    fc.integer({ min: 300, max: 60_000 }),
  )
  .map(([character, count]) => character.repeat(count));

export const oddNumber: fc.Arbitrary<HostileValue> = fc.oneof(
  fc.constantFrom(...ODD_NUMBER_TEXTS).map((text) => new RawJson(text)),
  fc.bigInt({ min: 2n ** 53n, max: 2n ** 80n }).map((big) => new RawJson(String(big))),
  fc.bigInt({ min: -(2n ** 80n), max: -(2n ** 53n) }).map((big) => new RawJson(String(big))),
  fc.integer(),
  fc.double({ noNaN: true, noDefaultInfinity: true }),
);

/** Nesting as deep as a body may hold, which recursive code (JSON.stringify) cannot walk. */
export const deepNesting: fc.Arbitrary<RawJson> = fc
  .tuple(fc.integer({ min: 1_000, max: 100_000 }), fc.constantFrom('array', 'object'))
  .map(([depth, kind]) =>
    kind === 'array'
      ? new RawJson(`${'['.repeat(depth)}${']'.repeat(depth)}`)
      : new RawJson(`${'{"a":'.repeat(depth)}1${'}'.repeat(depth)}`),
  );

/** GUID spellings the service accepts: any 8-4-4-4-12 hex string, in any case. */
export const GUID_ACCEPTED_FORMATS = ['lower', 'upper', 'mixed'] as const;
/** Spellings it refuses, as .NET's System.Text.Json does: braces, parentheses, no hyphens, padding. */
export const GUID_REFUSED_FORMATS = [
  'braces',
  'parentheses',
  'no-hyphens',
  'urn',
  'padded',
  'newline',
] as const;
export type GuidFormat = (typeof GUID_ACCEPTED_FORMATS)[number] | (typeof GUID_REFUSED_FORMATS)[number];

/** `guid` (lower case) spelled in `format`; `mixed` alternates case by position. */
export function spellGuid(guid: string, format: GuidFormat): string {
  switch (format) {
    case 'lower':
      return guid.toLowerCase();
    case 'upper':
      return guid.toUpperCase();
    case 'mixed':
      return [...guid].map((c, i) => (i % 2 ? c.toUpperCase() : c.toLowerCase())).join('');
    case 'braces':
      return `{${guid}}`;
    case 'parentheses':
      return `(${guid})`;
    case 'no-hyphens':
      return guid.replaceAll('-', '');
    case 'urn':
      return `urn:uuid:${guid}`;
    case 'padded':
      return ` ${guid} `;
    case 'newline':
      return `${guid}\n`;
  }
}

/**
 * A GUID of any version in any spelling, accepted ones three times as often as refused ones (so
 * bodies still reach the rules behind validation); `known` ids (that exist) are picked half the time.
 */
export function hostileGuid(known: readonly string[] = []): fc.Arbitrary<string> {
  const ids = known.length ? fc.oneof(fc.constantFrom(...known), fc.uuid()) : fc.uuid();
  const formats = fc.oneof(
    { weight: 3, arbitrary: fc.constantFrom<GuidFormat>(...GUID_ACCEPTED_FORMATS) },
    { weight: 1, arbitrary: fc.constantFrom<GuidFormat>(...GUID_REFUSED_FORMATS) },
  );
  return fc.tuple(ids, formats).map(([guid, format]) => spellGuid(guid, format));
}

/** E-mails in unicode, overlong in each part, malformed, padded, or merely odd in case. */
export const hostileEmail: fc.Arbitrary<string> = fc.oneof(
  fc.emailAddress(),
  fc.constantFrom(
    'Ada@Example.COM',
    'jürgen@bücher.example',
    '用户@例子.广告',
    'ada@xn--bcher-kva.example',
    '"quoted local"@example.com',
    'a@b',
    '@example.com',
    'ada@',
    'ada@@example.com',
    ' ada@example.com ',
    'ada\u0000@example.com',
    'ada@example.com\r\nBcc: eve@example.com',
    `${'a'.repeat(65)}@example.com`, // local part over 64
    `ada@${'d'.repeat(64)}.example`, // a label over 63
    `${'a'.repeat(64)}@${'d'.repeat(63)}.${'e'.repeat(63)}.${'f'.repeat(63)}.com`, // over 254 in all
    `${'ü'.repeat(40)}@example.com`,
    'ada@example.com'.normalize('NFD'),
    'e\u0301@example.com', // é decomposed; NFC is U+00E9
  ),
  fc.integer({ min: 255, max: 20_000 }).map((length) => `${'a'.repeat(length)}@example.com`),
);

/** A value of the wrong type for almost any field. */
export const wrongType: fc.Arbitrary<HostileValue> = fc.oneof(
  fc.constant(null),
  fc.boolean(),
  fc.integer(),
  fc.string({ maxLength: 20 }),
  // Made afresh for each draw: fc.constant would hand out one instance, which edits would share.
  fc.constant(null).map((): HostileValue => []),
  fc.constant(null).map(() => hostileObject()),
  fc.jsonValue({ maxDepth: 2 }).map(toHostile),
);

/** Anything hostile that can stand where a field's value goes. */
export const hostileValue: fc.Arbitrary<HostileValue> = fc.oneof(
  { weight: 4, arbitrary: wrongType },
  { weight: 3, arbitrary: oddNumber },
  { weight: 2, arbitrary: hostileGuid() },
  { weight: 2, arbitrary: hostileEmail },
  { weight: 1, arbitrary: hugeString },
  { weight: 1, arbitrary: deepNesting },
  { weight: 1, arbitrary: fc.constantFrom(...POLLUTION_ATTEMPTS) },
  {
    weight: 1,
    arbitrary: fc
      .array(fc.tuple(hostileKey, wrongType), { maxLength: 4 })
      .map((entries) => hostileObject(entries)),
  },
);

/** One edit of a body: replace a value, delete a member, or add one (under a hostile key). */
export interface Mutation {
  readonly op: 'replace' | 'delete' | 'add';
  /** Picks the place, modulo the number of candidates. */
  readonly at: number;
  readonly key: string;
  readonly value: HostileValue;
}

export const mutations: fc.Arbitrary<Mutation[]> = fc.array(
  fc.record({
    op: fc.constantFrom<Mutation['op']>('replace', 'delete', 'add'),
    at: fc.nat(),
    key: hostileKey,
    value: hostileValue,
  }),
  { minLength: 0, maxLength: 3 },
);

type Place = { readonly parent: HostileObject | HostileArray; readonly key: string | number };

function placesOf(value: HostileValue, places: Place[] = [], containers: HostileObject[] = []) {
  if (value instanceof RawJson || value === null || typeof value !== 'object') return { places, containers };
  if (Array.isArray(value)) {
    value.forEach((item, index) => {
      places.push({ parent: value, key: index });
      placesOf(item, places, containers);
    });
  } else {
    containers.push(value);
    for (const key of Object.keys(value)) {
      places.push({ parent: value, key });
      placesOf(value[key] ?? null, places, containers);
    }
  }
  return { places, containers };
}

/** A mutated copy of `body` (which is left as it was). */
export function applyMutations(body: unknown, edits: readonly Mutation[]): HostileValue {
  const root = toHostile(body);
  for (const drawn of edits) {
    // A copy: a drawn value is fast-check's, and an edit that shared it could make the body cyclic.
    const edit = { ...drawn, value: toHostile(drawn.value) };
    const { places, containers } = placesOf(root);
    if (edit.op === 'add') {
      const target = containers[edit.at % Math.max(1, containers.length)];
      if (target) target[edit.key] = edit.value;
      continue;
    }
    const place = places[edit.at % Math.max(1, places.length)];
    if (!place) continue;
    if (Array.isArray(place.parent)) {
      const index = place.key as number;
      if (edit.op === 'replace') place.parent[index] = edit.value;
      else place.parent.splice(index, 1);
    } else if (edit.op === 'replace') {
      place.parent[place.key] = edit.value;
    } else {
      delete place.parent[place.key];
    }
  }
  return root;
}

/** Any JSON text at all, and some that is not JSON: what a client with a bug might send. */
export const randomBodyText: fc.Arbitrary<string> = fc.oneof(
  { weight: 3, arbitrary: fc.jsonValue().map((value) => JSON.stringify(value)) },
  { weight: 3, arbitrary: hostileValue.map(toJsonText) },
  { weight: 1, arbitrary: fc.string({ unit: 'binary', maxLength: 40 }) },
  {
    weight: 1,
    arbitrary: fc.constantFrom('', 'null', '"text"', '12', 'true', '{', '{"a":}', '[1,]', '{"a":1,"a":2}'),
  },
);

/**
 * The run count of a property: its default, or HOSTILE_NUM_RUNS for a deeper local run
 * (`HOSTILE_NUM_RUNS=5000 npx jest test/property`).
 */
export function numRuns(defaultRuns: number): number {
  const fromEnv = Number(process.env.HOSTILE_NUM_RUNS);
  return Number.isInteger(fromEnv) && fromEnv > 0 ? fromEnv : defaultRuns;
}

/**
 * How long one hostile property may run: each of its cases is an HTTP request and a check that
 * nothing changed in Redis, 100 cases about 10 s on a quiet machine and past jest's 30 s default
 * when another suite shares the 2 cores (seen in CI). Generous, as a machine at half speed needs.
 */
export const PROPERTY_TIMEOUT_MS = 180_000;

/**
 * fast-check parameters shared by the hostile properties: the run count. The seed is the file's
 * PROPERTY_SEED (test/helpers/property-seed.ts), which replays a reported run.
 */
export function propertyParameters(defaultRuns: number): fc.Parameters<unknown> {
  return { numRuns: numRuns(defaultRuns) };
}
