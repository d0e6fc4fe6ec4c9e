import fc from 'fast-check';
import { generateSync } from 'json-schema-faker';

import type { JsonSchema } from '../../../ingress/http/json-schema';
import type { AssignableRole } from '../../../shared/roles';
import {
  applyMutations,
  deepNesting,
  type HostileValue,
  hostileValue,
  type Mutation,
  mutations,
  randomBodyText,
  RawJson,
  toJsonText,
} from '../hostile-json';
import { seededRandom } from '../seeded-random';
import type { FuzzTarget } from './document';
import {
  getAt,
  isBoundedNumber,
  isFreeText,
  type JsonPath,
  type SchemaField,
  schemaFields,
  setAt,
} from './schema-fields';

/**
 * The fuzzer's requests: for a target, a schema-valid body from json-schema-faker (seeded), then
 * one variation drawn by fast-check: left valid, its free text rewritten in awkward unicode of the
 * same length in code points (astral characters, lone surrogates, blanks, NUL), a string or number
 * at a boundary of its schema, hostile edits (dropped, added or retyped members), a duplicated
 * member, random text, a huge string within the body limit, deep nesting, another Content-Type,
 * or a method the path does not document. Every decision comes from the run's seed.
 */

export const ACCOUNTS = ['admin', 'member', 'userManager', 'serviceAccount'] as const;
export type AccountName = (typeof ACCOUNTS)[number];

/** The role each of the fuzzer's accounts is given (the stack seeds them so). */
export const ACCOUNT_ROLES: Readonly<Record<AccountName, AssignableRole>> = {
  admin: 'Admin',
  member: 'Member',
  userManager: 'UserManager',
  serviceAccount: 'ServiceAccount',
};

/** How a request authenticates; resolved against the running stack's accounts when sent. */
export type AuthChoice =
  | { readonly kind: 'none' }
  | { readonly kind: 'account'; readonly account: AccountName; readonly scheme: 'basic' | 'bearer' }
  | { readonly kind: 'metrics' }
  /** An account's e-mail with a wrong password (counts as a failed sign-in). */
  | { readonly kind: 'wrong-password'; readonly account: AccountName; readonly password: string }
  /** An account's token with its signature altered. */
  | { readonly kind: 'tampered-token'; readonly account: AccountName }
  | { readonly kind: 'garbage'; readonly header: string };

export type Variation =
  | { readonly kind: 'valid' }
  | { readonly kind: 'unicode'; readonly alphabet: readonly string[]; readonly pick: number }
  | { readonly kind: 'boundary'; readonly at: number; readonly edge: Edge; readonly character: string }
  | { readonly kind: 'mutated'; readonly edits: Mutation[] }
  | { readonly kind: 'duplicate'; readonly at: number; readonly value: HostileValue; readonly first: boolean }
  | { readonly kind: 'random'; readonly text: string }
  | { readonly kind: 'huge'; readonly at: number; readonly character: string; readonly bytes: number }
  | { readonly kind: 'deep'; readonly at: number; readonly value: RawJson }
  | { readonly kind: 'content-type'; readonly contentType: string }
  | { readonly kind: 'method'; readonly method: string };

export type Edge = 'max' | 'over-max' | 'min' | 'under-min' | 'max-units' | 'fraction';

/** What the generator needs of the running service: ids that exist, so requests reach deep. */
export interface KnownData {
  readonly accounts: Readonly<Record<AccountName, { readonly email: string; readonly password: string }>>;
  readonly teamIds: readonly string[];
  readonly importJobIds: readonly string[];
  readonly platformIds: readonly string[];
  readonly feedIds: readonly number[];
  readonly fantasyIds: readonly number[];
  /** BODY_LIMIT in bytes: a huge string stays within it. */
  readonly bodyLimitBytes: number;
}

/** One request of a run, fully decided. */
export interface FuzzCase {
  readonly index: number;
  readonly target: FuzzTarget;
  readonly variation: Variation['kind'] | 'query-string';
  readonly auth: AuthChoice;
  readonly method: string;
  /** The path with any query string. */
  readonly url: string;
  readonly contentType?: string;
  readonly body?: string;
  /**
   * The body as the service parses it, when that is certain (JSON.stringify of plain data), for
   * the validity checks; undefined where the text is hostile (duplicate keys, raw numbers).
   */
  readonly parsed?: unknown;
  /** True/false: the body is/is not valid for the target's schema (ajv); undefined when unknown. */
  readonly schemaValid?: boolean;
  /** What changed, for a person reading a failure. */
  readonly note: string;
}

/** Characters whose length differs between UTF-16 units, code points and bytes, or that are awkward. */
export const AWKWARD_CHARACTERS = [
  'a',
  'é',
  'e\u0301',
  '中',
  '😀',
  '𝔘',
  '\ud800',
  '\udc00',
  ' ',
  '\u00a0',
  '\u0000',
  '\u202e',
  '\ufeff',
  '"',
  '\\',
] as const;

const WRONG_METHODS = ['GET', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS'] as const;

const CONTENT_TYPES = [
  'text/plain',
  'application/json; charset=utf-16',
  'application/json; charset=latin1',
  'application/x-www-form-urlencoded',
  'application/merge-patch+json',
  'APPLICATION/JSON',
  'multipart/form-data; boundary=x',
  '',
] as const;

/** A header value fetch can send: printable ASCII. */
const headerText = fc.string({ maxLength: 60 });

export const authChoice: fc.Arbitrary<AuthChoice> = fc.oneof(
  {
    weight: 11,
    arbitrary: fc.record({
      kind: fc.constant('account' as const),
      account: fc.constantFrom(...ACCOUNTS),
      scheme: fc.constantFrom('basic' as const, 'bearer' as const),
    }),
  },
  { weight: 3, arbitrary: fc.constant({ kind: 'none' as const }) },
  { weight: 1, arbitrary: fc.constant({ kind: 'metrics' as const }) },
  {
    weight: 1,
    arbitrary: fc.record({
      kind: fc.constant('wrong-password' as const),
      account: fc.constantFrom(...ACCOUNTS),
      password: fc.string({ maxLength: 20 }),
    }),
  },
  {
    weight: 1,
    arbitrary: fc.record({
      kind: fc.constant('tampered-token' as const),
      account: fc.constantFrom(...ACCOUNTS),
    }),
  },
  {
    weight: 3,
    arbitrary: fc
      .oneof(
        headerText.map((text) => `Bearer ${text}`),
        fc.string({ unit: 'binary', maxLength: 40 }).map((text) => `Basic ${base64(text)}`),
        headerText.map((text) => `Basic ${text}`),
        headerText,
        fc.constantFrom(
          'Basic',
          'Bearer',
          'Basic ',
          'Bearer ',
          'Basic Og==',
          'Basic !!!!',
          'Digest username="x", realm="y"',
          'Bearer eyJhbGciOiJub25lIiwidHlwIjoiSldUIn0.eyJzdWIiOiJ4In0.',
          'Bearer a.b.c',
          `Basic ${'A'.repeat(8_000)}`,
          `Bearer ${'x'.repeat(8_000)}`,
        ),
      )
      .map((header) => ({ kind: 'garbage' as const, header })),
  },
);

function base64(text: string): string {
  return Buffer.from(text, 'utf8').toString('base64');
}

const variation: fc.Arbitrary<Variation> = fc.oneof(
  { weight: 20, arbitrary: fc.constant({ kind: 'valid' as const }) },
  {
    weight: 12,
    arbitrary: fc.record({
      kind: fc.constant('unicode' as const),
      alphabet: fc.subarray([...AWKWARD_CHARACTERS], { minLength: 1 }),
      pick: fc.nat(),
    }),
  },
  {
    weight: 14,
    arbitrary: fc.record({
      kind: fc.constant('boundary' as const),
      at: fc.nat(),
      edge: fc.constantFrom<Edge>('max', 'over-max', 'min', 'under-min', 'max-units', 'fraction'),
      character: fc.constantFrom(...AWKWARD_CHARACTERS),
    }),
  },
  { weight: 24, arbitrary: fc.record({ kind: fc.constant('mutated' as const), edits: mutations }) },
  {
    weight: 6,
    arbitrary: fc.record({
      kind: fc.constant('duplicate' as const),
      at: fc.nat(),
      value: hostileValue,
      first: fc.boolean(),
    }),
  },
  { weight: 7, arbitrary: fc.record({ kind: fc.constant('random' as const), text: randomBodyText }) },
  {
    weight: 1,
    arbitrary: fc.record({
      kind: fc.constant('huge' as const),
      at: fc.nat(),
      character: fc.constantFrom('a', '😀', '\ud800', '"', ' '),
      bytes: fc.integer({ min: 50_000, max: 900_000 }),
    }),
  },
  {
    weight: 3,
    arbitrary: fc.record({ kind: fc.constant('deep' as const), at: fc.nat(), value: deepNesting }),
  },
  {
    weight: 4,
    arbitrary: fc.record({
      kind: fc.constant('content-type' as const),
      contentType: fc.constantFrom(...CONTENT_TYPES),
    }),
  },
  {
    weight: 5,
    arbitrary: fc.record({ kind: fc.constant('method' as const), method: fc.constantFrom(...WRONG_METHODS) }),
  },
);

/** The draws of one case, before it is made concrete. */
interface Draw {
  readonly target: number;
  readonly auth: AuthChoice;
  readonly variation: Variation;
  readonly seed: number;
}

const draw = (targets: number): fc.Arbitrary<Draw> =>
  fc.record({
    target: fc.nat({ max: targets - 1 }),
    auth: authChoice,
    variation,
    seed: fc.integer({ min: 1, max: 2 ** 31 - 1 }),
  });

/** A GUID (version 4 layout) decided by `seed` and `n`. */
function seededGuid(seed: number, n: number): string {
  const random = seededRandom((seed ^ Math.imul(n + 1, 0x9e3779b1)) >>> 0);
  const hex = Array.from({ length: 32 }, () => Math.floor(random() * 16).toString(16)).join('');
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-4${hex.slice(13, 16)}-a${hex.slice(17, 20)}-${hex.slice(20, 32)}`;
}

/**
 * Rules the document states in words, not keywords (PlayerSeeding: `round` "at most
 * `finalRound`"): a body that breaks one is neither surely valid nor surely invalid.
 */
function keepsDescribedRules(body: unknown): boolean {
  const envelope = body as {
    importerType?: unknown;
    importData?: { round?: unknown; finalRound?: unknown };
  } | null;
  if (envelope?.importerType !== 'PlayerSeeding' || !envelope.importData) return true;
  const { round, finalRound } = envelope.importData;
  return typeof round !== 'number' || round <= (typeof finalRound === 'number' ? finalRound : 27);
}

/** A lone surrogate: in unicode mode, a surrogate that is half of a pair is not matched. */
const LONE_SURROGATE = /[\ud800-\udfff]/u;

/** Whether any string (member name or value) within `value` is not well-formed UTF-16. */
function holdsIllFormedText(value: unknown): boolean {
  // A loop, not recursion: a hostile body may nest deeper than the stack.
  const pending: unknown[] = [value];
  while (pending.length) {
    const current = pending.pop();
    if (typeof current === 'string') {
      if (LONE_SURROGATE.test(current)) return true;
    } else if (Array.isArray(current)) {
      pending.push(...(current as unknown[]));
    } else if (current !== null && typeof current === 'object') {
      for (const [key, inner] of Object.entries(current)) {
        if (LONE_SURROGATE.test(key)) return true;
        pending.push(inner);
      }
    }
  }
  return false;
}

/**
 * ajv's verdict, unless a rule in words leaves it open, or the body holds ill-formed text (a lone
 * surrogate): no schema keyword says so, but the service refuses it with the documented 400/401
 * wherever it would derive anything from it, so a refusal is as right as an acceptance there.
 */
function validity(validate: Validator, target: FuzzTarget, body: unknown): { schemaValid?: boolean } {
  const verdict = validate(target, body);
  if (verdict === undefined || (verdict && (!keepsDescribedRules(body) || holdsIllFormedText(body)))) {
    return {};
  }
  return { schemaValid: verdict };
}

function pickFrom<T>(random: () => number, values: readonly T[]): T | undefined {
  return values.length ? values[Math.floor(random() * values.length)] : undefined;
}

/** A schema-valid body for the target (json-schema-faker, seeded), filled with known ids half the time. */
export function validBody(target: FuzzTarget, seed: number, known: KnownData, everyField = false): unknown {
  const schema = target.schema as JsonSchema;
  const body = generateSync(schema as never, {
    seed,
    // Imports cost an argon2 hash per user, rosters a row per player: a few make the point.
    maxItems: everyField ? 1 : 3,
    maxLength: 40,
    ...(everyField ? { alwaysFakeOptionals: true, minItems: 1 } : { optionalsProbability: 0.5 }),
  });
  const random = seededRandom(seed ^ 0x5bd1e995);
  const useKnown = () => random() < 0.6;
  for (const field of schemaFields(body, schema)) {
    const name = field.path[field.path.length - 1];
    const value = getAt(body, field.path);
    if (typeof value === 'string' && field.schema.format === 'uuid' && useKnown()) {
      const pool =
        name === 'importJobId'
          ? known.importJobIds
          : name === 'platformId' || name === 'participantId'
            ? known.platformIds
            : name === 'id' || name === 'aggregateRootId'
              ? known.teamIds
              : [];
      const id = pickFrom(random, pool);
      if (id) setAt(body, field.path, id);
    }
    if (typeof value === 'number' && name === 'feedId' && useKnown()) {
      const id = pickFrom(random, known.feedIds);
      if (id !== undefined) setAt(body, field.path, id);
    }
    if (typeof value === 'number' && name === 'fantasyId' && useKnown()) {
      const id = pickFrom(random, known.fantasyIds);
      if (id !== undefined) setAt(body, field.path, id);
    }
    if (name === 'season' && typeof value === 'string' && useKnown()) setAt(body, field.path, '2026');
  }
  // Token grants: a real account's credentials most of the time, so the grant is really decided.
  const grant = body as Record<string, unknown>;
  const account = known.accounts[pickFrom(random, ACCOUNTS) ?? 'member'];
  if (target.path === '/api/auth/token' && useKnown()) {
    if (grant.grant_type === 'password')
      Object.assign(grant, { username: account.email, password: account.password });
    if (grant.grant_type === 'client_credentials' && random() < 0.7) {
      Object.assign(grant, { client_id: account.email, client_secret: account.password });
    }
  }
  // PlayerSeeding: "round: at most finalRound" is in the description, not in the schema's keywords.
  const importData = grant.importData as Record<string, unknown> | undefined;
  if (grant.importerType === 'PlayerSeeding' && importData) {
    const finalRound = typeof importData.finalRound === 'number' ? importData.finalRound : 27;
    if (typeof importData.round === 'number' && importData.round > finalRound) importData.round = finalRound;
  }
  return body;
}

/** `count` code points of `character` (a character of one or more code points counts as its own length). */
function codePoints(character: string, count: number): string {
  const unit = [...character].length;
  return character.repeat(Math.max(0, Math.floor(count / unit))) + 'a'.repeat(Math.max(0, count % unit));
}

function boundaryValue(field: SchemaField, edge: Edge, character: string): unknown {
  const { schema } = field;
  if (isFreeText(field)) {
    const min = typeof schema.minLength === 'number' ? schema.minLength : 0;
    const max = typeof schema.maxLength === 'number' ? schema.maxLength : undefined;
    switch (edge) {
      case 'max':
        return codePoints(character, max ?? 256);
      case 'over-max':
        return max === undefined ? codePoints(character, 2_000) : codePoints(character, max + 1);
      case 'min':
        return codePoints(character, min);
      case 'under-min':
        return codePoints(character, Math.max(0, min - 1));
      case 'max-units':
        // As many UTF-16 units as the maximum allows characters: half as many astral characters.
        return codePoints('😀', Math.floor((max ?? 256) / 2));
      case 'fraction':
        return codePoints(character, Math.max(min, Math.floor((max ?? 64) / 2) + 1));
    }
  }
  const min = typeof schema.minimum === 'number' ? schema.minimum : undefined;
  const max = typeof schema.maximum === 'number' ? schema.maximum : undefined;
  switch (edge) {
    case 'max':
      return max ?? min;
    case 'over-max':
      return max === undefined ? 2 ** 53 : max + 1;
    case 'min':
      return min ?? max;
    case 'under-min':
      return min === undefined ? -(2 ** 53) : min - 1;
    case 'max-units':
      return (max ?? 1) - 1;
    case 'fraction':
      return (min ?? 0) + 0.5;
  }
}

/** Rewrites free text as awkward unicode of the same length in code points. */
function unicodeRewrite(
  body: unknown,
  schema: JsonSchema,
  alphabet: readonly string[],
  pick: number,
): string[] {
  const changed: string[] = [];
  schemaFields(body, schema)
    .filter((field) => field.path.length > 0 && isFreeText(field))
    .forEach((field, i) => {
      const value = getAt(body, field.path);
      if (typeof value !== 'string') return;
      const character = alphabet[(pick + i) % alphabet.length] ?? 'a';
      setAt(body, field.path, codePoints(character, [...value].length));
      changed.push(field.path.join('.'));
    });
  return changed;
}

/** JSON text with `key` of the `at`-th object written twice (`extra` first or last). */
function withDuplicate(
  body: unknown,
  at: number,
  extra: HostileValue,
  first: boolean,
): { text: string; note: string } {
  const objects = schemaFieldsOfObjects(body);
  const target = objects[at % Math.max(1, objects.length)];
  let note = 'no object to duplicate a member of';
  const write = (value: unknown): string => {
    if (Array.isArray(value)) return `[${value.map(write).join(',')}]`;
    if (value !== null && typeof value === 'object') {
      const entries = Object.entries(value).map(([key, inner]) => `${JSON.stringify(key)}:${write(inner)}`);
      if (value === target && entries.length) {
        const key = Object.keys(value)[at % entries.length] as string;
        const duplicate = `${JSON.stringify(key)}:${toJsonText(extra)}`;
        note = `member ${key} written twice (${first ? 'hostile value first' : 'hostile value last'})`;
        if (first) entries.unshift(duplicate);
        else entries.push(duplicate);
      }
      return `{${entries.join(',')}}`;
    }
    return JSON.stringify(value);
  };
  return { text: write(body), note };
}

function schemaFieldsOfObjects(body: unknown): object[] {
  const out: object[] = [];
  const walk = (value: unknown) => {
    if (Array.isArray(value)) value.forEach(walk);
    else if (value !== null && typeof value === 'object') {
      out.push(value);
      Object.values(value).forEach(walk);
    }
  };
  walk(body);
  return out;
}

/** Percent-encodes like a form, but writes a lone surrogate as its WTF-8 bytes instead of throwing. */
export function formEncode(body: unknown): string {
  if (body === null || typeof body !== 'object' || Array.isArray(body)) return percent(String(body));
  const pairs: string[] = [];
  for (const [key, value] of Object.entries(body)) {
    const values = Array.isArray(value) ? value : [value];
    for (const one of values) {
      const text = typeof one === 'string' ? one : jsonOrMarker(one);
      pairs.push(`${percent(key)}=${percent(text)}`);
    }
  }
  return pairs.join('&');
}

/** JSON text of a form value; a value too deep to write is sent as a marker. */
function jsonOrMarker(value: unknown): string {
  try {
    return value instanceof RawJson ? value.text : (JSON.stringify(value) ?? 'null');
  } catch {
    return '[too deep]';
  }
}

function percent(text: string): string {
  let out = '';
  for (let i = 0; i < text.length; i++) {
    const unit = text.charCodeAt(i);
    const next = text.charCodeAt(i + 1);
    if (unit >= 0xd800 && unit <= 0xdbff && next >= 0xdc00 && next <= 0xdfff) {
      out += encodeURIComponent(text.slice(i, i + 2));
      i++;
    } else if (unit >= 0xd800 && unit <= 0xdfff) {
      out +=
        `%${(0xe0 | (unit >> 12)).toString(16)}%${(0x80 | ((unit >> 6) & 0x3f)).toString(16)}%${(0x80 | (unit & 0x3f)).toString(16)}`.toUpperCase();
    } else {
      out += encodeURIComponent(text[i] as string);
    }
  }
  return out.replaceAll('%20', '+');
}

/** Schema validity of a parsed body, as decided by `validate` (ajv against the target's schema). */
export type Validator = (target: FuzzTarget, value: unknown) => boolean | undefined;

/** Makes the `index`-th case concrete. */
function concreteCase(
  index: number,
  drawn: Draw,
  targets: readonly FuzzTarget[],
  known: KnownData,
  validate: Validator,
): FuzzCase {
  const target = targets[drawn.target] as FuzzTarget;
  const { variation, auth } = drawn;
  const base = { index, target, auth, variation: variation.kind };
  if (variation.kind === 'method') {
    return {
      ...base,
      method: variation.method,
      url: target.path,
      note: `${variation.method} on ${target.path}`,
    };
  }
  if (!target.schema) {
    // No body: the variation becomes a query string of hostile text (ignored, but parsed).
    const character = AWKWARD_CHARACTERS[drawn.seed % AWKWARD_CHARACTERS.length] ?? 'a';
    const text = variation.kind === 'valid' ? '' : `?q=${percent(codePoints(character, drawn.seed % 200))}`;
    return {
      ...base,
      variation: variation.kind === 'valid' ? 'valid' : 'query-string',
      method: target.method,
      url: `${target.path}${text}`,
      note: text ? 'hostile query string' : 'plain',
    };
  }
  const body = validBody(target, drawn.seed, known);
  const form = target.mediaType === 'application/x-www-form-urlencoded';
  const encode = (value: unknown) => (form ? formEncode(value) : JSON.stringify(value));
  const request = { ...base, method: target.method, url: target.path, contentType: target.mediaType };
  const certain = (value: unknown, note: string): FuzzCase => ({
    ...request,
    body: encode(value),
    parsed: value,
    ...validity(validate, target, value),
    note,
  });
  const schema = target.schema;
  switch (variation.kind) {
    case 'valid':
      return certain(body, 'as generated');
    case 'unicode': {
      const changed = unicodeRewrite(body, schema, variation.alphabet, variation.pick);
      return certain(
        body,
        `free text rewritten with ${JSON.stringify(variation.alphabet)}: ${changed.join(', ') || 'none'}`,
      );
    }
    case 'boundary': {
      const fields = schemaFields(body, schema).filter(
        (field) => field.path.length > 0 && (isFreeText(field) || isBoundedNumber(field)),
      );
      const field = fields[variation.at % Math.max(1, fields.length)];
      if (!field) return certain(body, 'no bounded field');
      const value = boundaryValue(field, variation.edge, variation.character);
      setAt(body, field.path, value);
      const shown =
        typeof value === 'string'
          ? `${[...value].length} code points (${value.length} units) of ${JSON.stringify(variation.character)}`
          : String(value);
      return certain(body, `${field.path.join('.')} at ${variation.edge}: ${shown}`);
    }
    case 'mutated': {
      const hostile = applyMutations(body, variation.edits);
      const json = toJsonText(hostile);
      let parsed: unknown;
      try {
        parsed = JSON.parse(json);
      } catch {
        parsed = undefined;
      }
      const text = form ? formEncode(hostile) : json;
      return {
        ...request,
        body: text,
        ...(parsed === undefined ? {} : { parsed, ...validity(validate, target, parsed) }),
        note: `edits ${describeEdits(variation.edits)}`,
      };
    }
    case 'duplicate': {
      if (form) {
        const record = body as Record<string, unknown>;
        const keys = Object.keys(record);
        const key = keys[variation.at % Math.max(1, keys.length)] ?? 'grant_type';
        const extra = `${percent(key)}=${percent(toJsonText(variation.value))}`;
        const text = variation.first ? `${extra}&${formEncode(body)}` : `${formEncode(body)}&${extra}`;
        return { ...request, body: text, note: `form field ${key} sent twice` };
      }
      const { text, note } = withDuplicate(body, variation.at, variation.value, variation.first);
      return { ...request, body: text, note };
    }
    case 'random':
      return { ...request, body: variation.text, note: 'random text' };
    case 'huge': {
      const fields = schemaFields(body, schema).filter((field) => field.path.length > 0 && isFreeText(field));
      const field = fields[variation.at % Math.max(1, fields.length)];
      const bytesPerCharacter = Buffer.byteLength(JSON.stringify(variation.character)) - 2;
      const limit = Math.min(variation.bytes, known.bodyLimitBytes - 4_096);
      const value = variation.character.repeat(Math.max(1, Math.floor(limit / bytesPerCharacter)));
      if (field) setAt(body, field.path, value);
      else (body as Record<string, unknown>).huge = value;
      return certain(
        body,
        `${field ? field.path.join('.') : 'huge'}: ${value.length} units of ${JSON.stringify(variation.character)}`,
      );
    }
    case 'deep': {
      const fields = schemaFields(body, schema).filter((field) => field.path.length > 0);
      const field = fields[variation.at % Math.max(1, fields.length)];
      const hostile = applyMutations(body, []);
      if (field) setAtHostile(hostile, field.path, variation.value);
      return {
        ...request,
        body: toJsonText(hostile),
        note: `${field?.path.join('.') ?? '(none)'} nested ${variation.value.text.length / 2} deep`,
      };
    }
    case 'content-type': {
      const contentType = variation.contentType;
      return {
        ...request,
        ...(contentType ? { contentType } : { contentType: undefined }),
        body: encode(body),
        note: `Content-Type ${JSON.stringify(contentType)}`,
      };
    }
  }
}

function setAtHostile(root: HostileValue, path: JsonPath, value: HostileValue): void {
  setAt(root, path, value);
}

function describeEdits(edits: readonly Mutation[]): string {
  if (!edits.length) return '(none)';
  return edits
    .map((edit) => {
      const value = toJsonText(edit.value);
      const shown = value.length > 60 ? `${value.slice(0, 60)}... (${value.length} chars)` : value;
      return edit.op === 'delete'
        ? `delete #${edit.at}`
        : `${edit.op} #${edit.at} ${JSON.stringify(edit.key.slice(0, 30))}=${shown}`;
    })
    .join('; ');
}

/** Cases are drawn in chunks (each from the run's seed and its number), so a long run stays small in memory. */
const CHUNK = 500;

/** The run's cases, made as they are needed: `count` of them, all decided by `seed`. */
export function* fuzzCases(
  targets: readonly FuzzTarget[],
  known: KnownData,
  validate: Validator,
  seed: number,
  count: number,
  first = 0,
): Generator<FuzzCase> {
  for (let chunk = 0; chunk * CHUNK < count; chunk++) {
    const chunkSeed = (seed + chunk * 1_000_003) % 2 ** 31;
    const size = Math.min(CHUNK, count - chunk * CHUNK);
    const draws = fc.sample(draw(targets.length), { seed: chunkSeed, numRuns: size });
    for (const [i, drawn] of draws.entries()) {
      yield concreteCase(first + chunk * CHUNK + i, drawn, targets, known, validate);
    }
  }
}

/** Every auth scheme the sweep tries on every target. */
export const SWEEP_AUTH: readonly AuthChoice[] = [
  { kind: 'none' },
  ...ACCOUNTS.flatMap((account) => [
    { kind: 'account' as const, account, scheme: 'basic' as const },
    { kind: 'account' as const, account, scheme: 'bearer' as const },
  ]),
  { kind: 'metrics' },
  { kind: 'tampered-token', account: 'admin' },
  { kind: 'garbage', header: 'Bearer not-a-token' },
  { kind: 'garbage', header: 'Basic bm8tc3VjaC11c2VyQGV4YW1wbGUuY29tOng=' },
];

/**
 * Before the random cases, a sweep: one schema-valid request of every target under every auth
 * scheme, so each pairing is covered whatever the seed draws.
 */
export function sweepCases(
  targets: readonly FuzzTarget[],
  known: KnownData,
  validate: Validator,
  seed: number,
): FuzzCase[] {
  const cases: FuzzCase[] = [];
  targets.forEach((_, target) => {
    for (const auth of SWEEP_AUTH) {
      const drawn: Draw = {
        target,
        auth,
        variation: { kind: 'valid' },
        seed: (seed + cases.length * 7919) % 2 ** 31 || 1,
      };
      cases.push(concreteCase(cases.length, drawn, targets, known, validate));
    }
  });
  return cases;
}

/** Characters whose count differs between code points, UTF-16 units and bytes, or that trim away. */
const EDGE_CHARACTERS = ['😀', 'é', '\ud800', ' ', '\ufeff'] as const;

/** The account and scheme a target's document entry asks for, so a body is decided, not refused at the door. */
export function rightfulAuth(target: FuzzTarget): AuthChoice {
  if (target.security.includes('none')) return { kind: 'none' };
  const scheme = target.security.includes('bearer') ? 'bearer' : 'basic';
  const account: AccountName = target.roles.includes('ServiceAccount')
    ? 'serviceAccount'
    : target.roles.includes('Member')
      ? 'member'
      : 'admin';
  return { kind: 'account', account, scheme };
}

/**
 * A sweep of every bounded field of every target (all optional members filled in): each string at
 * its maximum and minimum length in characters of different widths (astral, accented, a lone
 * surrogate, a blank, a BOM), each number at and beyond its limits, sent with the account the
 * target asks for. What it finds does not depend on the seed's luck.
 */
export function boundarySweepCases(
  targets: readonly FuzzTarget[],
  known: KnownData,
  validate: Validator,
  seed: number,
  first: number,
): FuzzCase[] {
  const cases: FuzzCase[] = [];
  for (const target of targets) {
    if (!target.schema) continue;
    const form = target.mediaType === 'application/x-www-form-urlencoded';
    const original = validBody(target, seed, known, true);
    const fields = schemaFields(original, target.schema).filter(
      (field) => field.path.length > 0 && (isFreeText(field) || isBoundedNumber(field)),
    );
    for (const field of fields) {
      const minLength = Number(field.schema.minLength ?? 0);
      const edges: [Edge, string][] = isFreeText(field)
        ? [
            ...EDGE_CHARACTERS.flatMap((character): [Edge, string][] => [
              ['max', character],
              ...(minLength > 0 ? [['min', character] as [Edge, string]] : []),
            ]),
            // One character short, in characters of two UTF-16 units: refused, whatever the units say.
            ...(minLength > 1 ? [['under-min', '😀'] as [Edge, string]] : []),
            ['over-max', 'a'],
          ]
        : (['max', 'min', 'over-max', 'under-min'] as const).map((edge): [Edge, string] => [edge, 'a']);
      for (const [edge, character] of edges) {
        const body = structuredClone(original);
        const value = boundaryValue(field, edge, character);
        if (value === undefined) continue;
        setAt(body, field.path, value);
        // A fresh requestId each: a repeated one would be answered from the first (idempotency).
        const envelope = body as Record<string, unknown>;
        if (typeof envelope.requestId === 'string')
          envelope.requestId = seededGuid(seed, first + cases.length);
        const shown =
          typeof value === 'string'
            ? `${[...value].length} code points (${value.length} units) of ${JSON.stringify(character)}`
            : JSON.stringify(value);
        cases.push({
          index: first + cases.length,
          target,
          variation: 'boundary',
          auth: rightfulAuth(target),
          method: target.method,
          url: target.path,
          ...(target.mediaType ? { contentType: target.mediaType } : {}),
          body: form ? formEncode(body) : JSON.stringify(body),
          parsed: body,
          ...validity(validate, target, body),
          note: `sweep: ${field.path.join('.')} at ${edge}: ${shown}`,
        });
      }
    }
  }
  return cases;
}
