import fc from 'fast-check';

import { jsonNestedDeeperThan, MAX_JSON_DEPTH } from '../../shared/http/request-body';

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
