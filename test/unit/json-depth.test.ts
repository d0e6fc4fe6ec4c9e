import fc from 'fast-check';

import { IMPORT_ROW_BOUNDS, importBodyBounds } from '../../ingress/import/import-body-bounds';
import {
  jsonNestedDeeperThan,
  jsonShapeFault,
  JsonShapeScan,
  MAX_JSON_DEPTH,
  SHORT_STRING_BYTES,
} from '../../shared/http/request-body';

const deeper = (text: string, max = MAX_JSON_DEPTH) => jsonNestedDeeperThan(Buffer.from(text, 'utf8'), max);

/** The depth JSON.parse's value really has: arrays and objects inside each other. */
function depthOf(value: unknown): number {
  if (Array.isArray(value)) return 1 + Math.max(0, ...value.map(depthOf));
  if (typeof value === 'object' && value !== null)
    return 1 + Math.max(0, ...Object.values(value).map(depthOf));
  return 0;
}

describe('JSON nesting depth scan', () => {
  it('When arrays and objects nest exactly to the limit, then the body passes; one level more, it does not', () => {
    expect(deeper('['.repeat(64) + ']'.repeat(64))).toBe(false);
    expect(deeper('['.repeat(65) + ']'.repeat(65))).toBe(true);
    expect(deeper(`${'{"a":'.repeat(64)}1${'}'.repeat(64)}`)).toBe(false);
    expect(deeper(`${'{"a":['.repeat(33)}1${']}'.repeat(33)}`)).toBe(true);
  });

  it('When brackets sit inside strings, with escaped quotes and backslashes, then they do not count', () => {
    expect(deeper(JSON.stringify({ s: '['.repeat(100) }), 2)).toBe(false);
    expect(deeper(JSON.stringify({ s: '\\"[[[[', t: '\\', u: [[1]] }), 3)).toBe(false);
    expect(deeper(JSON.stringify({ s: '\\', u: [[[1]]] }), 3)).toBe(true);
    expect(deeper(JSON.stringify({ 'é€😀': ['[', '"', '\\'], ü: { x: '{{{' } }), 2)).toBe(false);
  });

  it('When the text is not valid JSON, then the scan neither throws nor refuses it for depth (JSON.parse words that error)', () => {
    expect(deeper(']]]]]]')).toBe(false);
    expect(deeper('"unterminated [[[[')).toBe(false);
    expect(deeper('')).toBe(false);
  });

  it('When any JSON value is scanned, then it is refused exactly when its real depth passes the limit', () => {
    fc.assert(
      fc.property(fc.jsonValue({ maxDepth: 8 }), fc.integer({ min: 0, max: 8 }), (value, max) => {
        expect(deeper(JSON.stringify(value), max)).toBe(depthOf(value) > max);
      }),
      { numRuns: 500 },
    );
  });
});

/** The objects and arrays JSON.parse builds for `value`. */
function containersOf(value: unknown): number {
  if (Array.isArray(value)) return 1 + value.reduce((sum: number, item) => sum + containersOf(item), 0);
  if (typeof value === 'object' && value !== null)
    return 1 + Object.values(value).reduce((sum: number, item) => sum + containersOf(item), 0);
  return 0;
}

/** The `:` and `,` of `value`'s JSON text: a key's colon, and the commas between entries. */
function itemsOf(value: unknown): number {
  if (Array.isArray(value))
    return Math.max(0, value.length - 1) + value.reduce((sum: number, item) => sum + itemsOf(item), 0);
  if (typeof value === 'object' && value !== null) {
    const entries = Object.values(value);
    return (
      entries.length +
      Math.max(0, entries.length - 1) +
      entries.reduce((sum: number, item) => sum + itemsOf(item), 0)
    );
  }
  return 0;
}

/** The different keys of `value`'s objects, as its JSON text writes them. */
function distinctKeysOf(value: unknown, keys = new Set<string>()): Set<string> {
  if (Array.isArray(value)) for (const item of value) distinctKeysOf(item, keys);
  else if (typeof value === 'object' && value !== null) {
    for (const [key, item] of Object.entries(value)) {
      keys.add(key);
      distinctKeysOf(item, keys);
    }
  }
  return keys;
}

/** The different string values (not keys) of `value` whose JSON text is SHORT_STRING_BYTES or fewer between its quotes. */
function distinctShortStringsOf(value: unknown, strings = new Set<string>()): Set<string> {
  if (typeof value === 'string') {
    if (Buffer.byteLength(JSON.stringify(value), 'utf8') - 2 <= SHORT_STRING_BYTES) strings.add(value);
  } else if (Array.isArray(value)) for (const item of value) distinctShortStringsOf(item, strings);
  else if (typeof value === 'object' && value !== null)
    for (const item of Object.values(value)) distinctShortStringsOf(item, strings);
  return strings;
}

describe('JSON value bounds scan', () => {
  const fault = (value: unknown, maxContainers: number, maxItems: number) =>
    jsonShapeFault(Buffer.from(JSON.stringify(value), 'utf8'), 1_000, { maxContainers, maxItems });

  it('When any JSON value is scanned, then it is refused exactly when it holds more objects and arrays, or keys and values, than allowed', () => {
    fc.assert(
      fc.property(
        fc.jsonValue({ maxDepth: 6 }),
        fc.integer({ min: 0, max: 40 }),
        fc.integer({ min: 0, max: 80 }),
        (value, maxContainers, maxItems) => {
          const tooMany = containersOf(value) > maxContainers || itemsOf(value) > maxItems;
          expect(fault(value, maxContainers, maxItems) !== undefined).toBe(tooMany);
        },
      ),
      { numRuns: 500 },
    );
  });

  it('When any JSON value is scanned with bounds on different keys and short strings, then it is refused exactly when it holds more of either than allowed', () => {
    fc.assert(
      fc.property(
        // A lone string is no key and ends no value: the scan counts strings inside objects and arrays.
        fc.oneof(
          fc.array(fc.jsonValue({ maxDepth: 5 })),
          fc.dictionary(fc.string(), fc.jsonValue({ maxDepth: 5 })),
        ),
        fc.integer({ min: 0, max: 30 }),
        fc.integer({ min: 0, max: 30 }),
        (value, maxDistinctKeys, maxDistinctShortStrings) => {
          const found = jsonShapeFault(Buffer.from(JSON.stringify(value), 'utf8'), 1_000, {
            maxContainers: Infinity,
            maxItems: Infinity,
            maxDistinctKeys,
            maxDistinctShortStrings,
          });
          const keys = distinctKeysOf(value).size > maxDistinctKeys;
          const strings = distinctShortStringsOf(value).size > maxDistinctShortStrings;
          expect(found !== undefined).toBe(keys || strings);
          if (found !== undefined) expect(['tooManyDistinctKeys', 'tooManyShortStrings']).toContain(found);
        },
      ),
      { numRuns: 500 },
    );
  });

  it('When keys repeat, or white space stands before their colons, or strings are long, then only different keys and different short strings count', () => {
    const bounds = {
      maxContainers: Infinity,
      maxItems: Infinity,
      maxDistinctKeys: 2,
      maxDistinctShortStrings: 2,
    };
    const scan = (text: string) => jsonShapeFault(Buffer.from(text, 'utf8'), 64, bounds);
    expect(scan(JSON.stringify(Array.from({ length: 1_000 }, (_, i) => ({ a: i, b: 'x', c: 'y' }))))).toBe(
      'tooManyDistinctKeys',
    );
    expect(
      scan(JSON.stringify(Array.from({ length: 1_000 }, (_, i) => ({ a: i, b: 'xy' })))),
    ).toBeUndefined();
    expect(scan('[{"a" :1},{"b"\n\t: 2},{"c"\r:3}]')).toBe('tooManyDistinctKeys');
    expect(
      scan(JSON.stringify(Array.from({ length: 1_000 }, (_, i) => `a longer string, number ${i}`))),
    ).toBeUndefined();
    expect(scan('["a", "b" ,"a","b"]')).toBeUndefined();
    expect(scan('["a","b","c"]')).toBe('tooManyShortStrings');
    // Ten bytes is short, eleven is not; an escape counts as the bytes written.
    expect(scan('["0123456789","1123456789","2123456789"]')).toBe('tooManyShortStrings');
    expect(scan('["01234567890","11234567890","21234567890"]')).toBeUndefined();
    expect(scan('["\\u0041","\\u0042","\\u0043"]')).toBe('tooManyShortStrings');
  });

  it('When a JSON text arrives cut into chunks anywhere (inside strings, between a backslash and what it escapes), then the scan finds what it finds in the whole text', () => {
    fc.assert(
      fc.property(
        fc.jsonValue({ maxDepth: 6 }),
        fc.array(fc.nat(), { maxLength: 6 }),
        fc.integer({ min: 0, max: 6 }),
        fc.integer({ min: 0, max: 30 }),
        (value, cuts, maxDepth, maxContainers) => {
          const bytes = Buffer.from(JSON.stringify(value), 'utf8');
          const bounds = {
            maxContainers,
            maxItems: 2 * maxContainers,
            maxDistinctKeys: maxContainers,
            maxDistinctShortStrings: maxContainers,
          };
          const at = [...new Set(cuts.map((cut) => cut % (bytes.length + 1)))].sort((a, b) => a - b);
          const scan = new JsonShapeScan(maxDepth, bounds);
          let fault: ReturnType<JsonShapeScan['feed']>;
          let from = 0;
          for (const to of [...at, bytes.length]) {
            fault = scan.feed(bytes.subarray(from, to));
            from = to;
          }
          expect(fault).toBe(jsonShapeFault(bytes, maxDepth, bounds));
        },
      ),
      { numRuns: 1000 },
    );
    // The cut the property may miss: between an escaping backslash and the quote it escapes.
    const scan = new JsonShapeScan(1);
    expect(scan.feed(Buffer.from('["a\\'))).toBeUndefined();
    expect(scan.feed(Buffer.from('"[[["]'))).toBeUndefined();
    expect(scan.feed(Buffer.from('[[1]]'))).toBe('tooDeep');
  });

  it('When IMPORT_MAX_ROWS players each hold every field, 20 positions, a 12-round breakdown and names unlike those of any other row, then the import body passes the bounds', () => {
    const breakdown = Object.fromEntries(
      Array.from({ length: 12 }, (_, round) => [String(round), { projectedPoints: 1.5, priceDelta: -2 }]),
    );
    // Every name and id short and unlike any other row's: the most short strings a row may bring.
    const player = (i: number) => ({
      feedId: 1,
      feedFirstName: `a${i}`,
      feedLastName: `b${i}`,
      feedFullName: `c${i}`,
      feedShortName: `d${i}`,
      leaguePlayerId: `e${i}`,
      leagueFirstName: `f${i}`,
      leagueLastName: `g${i}`,
      fantasyId: 2,
      platformId: '3fa85f64-5717-4562-b3fc-2c963f66afa6',
      platformFullName: `h${i}`,
      platformSlug: `i${i}`,
      stats: {
        rating: 1.2,
        price: 100,
        fantasyPositions: Array.from({ length: 20 }, (_, i) => i),
        breakdown,
      },
    });
    expect(containersOf(player(1))).toBeLessThanOrEqual(IMPORT_ROW_BOUNDS.maxContainers);
    expect(itemsOf(player(1)) + 1).toBeLessThanOrEqual(IMPORT_ROW_BOUNDS.maxItems);
    expect(distinctShortStringsOf(player(1)).size).toBeLessThanOrEqual(
      IMPORT_ROW_BOUNDS.maxDistinctShortStrings,
    );
    const rows = 10_000;
    const body = {
      requestId: '3fa85f64-5717-4562-b3fc-2c963f66afa6',
      importerType: 'PlayerSeeding',
      priority: 'High',
      dryRun: true,
      importData: {
        season: '2026',
        round: 1,
        finalRound: 38,
        players: Array.from({ length: rows }, (_, i) => player(i)),
      },
    };
    const bytes = Buffer.from(JSON.stringify(body), 'utf8');
    expect(jsonShapeFault(bytes, MAX_JSON_DEPTH, importBodyBounds(rows))).toBeUndefined();
  });
});
