import fc from 'fast-check';

import { DistinctHashes } from '../../shared/http/distinct-hashes';

describe('Distinct hashes', () => {
  it('When hashes are added, repeated or not, past the first table size, then the count passes the bound exactly at the first different hash beyond it', () => {
    fc.assert(
      fc.property(
        // Odd values: the table stores each hash with its lowest bit set, so an even one counts with its odd twin.
        fc.array(
          fc.integer({ min: 0, max: 0x7fffffff }).map((value) => (value * 2 + 1) >>> 0),
          {
            maxLength: 600,
          },
        ),
        fc.integer({ min: 0, max: 400 }),
        (hashes, max) => {
          const table = new DistinctHashes(max);
          const seen = new Set<number>();
          for (const hash of hashes) {
            seen.add(hash);
            expect(table.addPastMax(hash)).toBe(seen.size > max);
            if (seen.size > max) return;
          }
        },
      ),
      { numRuns: 300 },
    );
  });
});
