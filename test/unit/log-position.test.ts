import fc from 'fast-check';

import {
  beginningPosition,
  compareEntryIds,
  decodePosition,
  encodePosition,
  type EntryId,
  parseEntryId,
} from '../../shared/event-stream/log-position';
import { LOG_PARTITIONS } from '../../shared/redis/partitions';

const entryId = fc.oneof(
  fc.constant<EntryId>({ ms: 0, seq: 0 }),
  fc.record({ ms: fc.integer({ min: 1, max: 2 ** 45 }), seq: fc.integer({ min: 0, max: 2 ** 40 }) }),
);
const position = fc.array(entryId, { minLength: LOG_PARTITIONS, maxLength: LOG_PARTITIONS });

describe('Log positions (the event stream ids)', () => {
  it('When any position is encoded, then it decodes to itself, in short base64url text', () => {
    fc.assert(
      fc.property(position, (value) => {
        const text = encodePosition(value);
        expect(text).toMatch(/^1\.[A-Za-z0-9_-]+$/);
        expect(decodePosition(text)).toEqual(value);
      }),
    );
  });

  it('When positions are realistic (one clock, ids minutes apart), then the text stays under 100 characters', () => {
    const now = 1_764_000_000_000;
    const value = Array.from({ length: LOG_PARTITIONS }, (_, i) => ({ ms: now + i * 60_000, seq: i % 3 }));
    expect(encodePosition(value).length).toBeLessThan(100);
    expect(encodePosition(beginningPosition()).length).toBeLessThan(50);
  });

  it('When text is not exactly what encode wrote, then it is refused (undefined), never thrown', () => {
    fc.assert(
      fc.property(fc.string({ maxLength: 300 }), (text) => {
        const decoded = decodePosition(text);
        if (decoded !== undefined) expect(encodePosition(decoded)).toBe(text);
      }),
    );
    fc.assert(
      fc.property(position, fc.nat(), fc.integer({ min: 1, max: 255 }), (value, at, flip) => {
        const text = encodePosition(value);
        const bytes = Buffer.from(text.slice(2), 'base64url');
        const i = at % bytes.length;
        bytes[i] = (bytes[i] as number) ^ flip;
        const altered = `1.${bytes.toString('base64url')}`;
        const decoded = decodePosition(altered);
        // An altered byte either fails to decode or decodes to a different, canonical position.
        if (decoded !== undefined) expect(encodePosition(decoded)).toBe(altered);
      }),
    );
    for (const text of ['', '1.', '2.AA', '1.AA==', '1.A+/', '1.' + 'A'.repeat(300), '1700000000000-0']) {
      expect(decodePosition(text)).toBeUndefined();
    }
    const base = encodePosition(beginningPosition());
    expect(decodePosition(`${base}AA`)).toBeUndefined();
    expect(decodePosition(base.slice(0, -1))).toBeUndefined();
  });

  it('When entry ids are compared, then milliseconds first, then the sequence', () => {
    expect(compareEntryIds(parseEntryId('5-9'), parseEntryId('6-0'))).toBeLessThan(0);
    expect(compareEntryIds(parseEntryId('6-1'), parseEntryId('6-0'))).toBeGreaterThan(0);
    expect(compareEntryIds(parseEntryId('6-1'), parseEntryId('6-1'))).toBe(0);
    expect(() => parseEntryId('99999999999999999-0')).toThrow();
  });
});
