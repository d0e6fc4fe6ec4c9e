import fc from 'fast-check';

import { choosePass, type PassState } from '../../workers/projector/pass-choice';

/**
 * Issue 43, ADR 0050: a projector pass carries every pair announced with nothing waiting before its
 * change, and at most backlogPairsPerPass of the pairs with a backlog, so a fresh change never
 * waits for a pass of every backlogged batch. Properties draw from the file's seed (printed on
 * failure: PROPERTY_SEED).
 */

const pair = (projection: string, partition: number) => `${projection}:${partition}`;

function pass(state: Partial<PassState> & Pick<PassState, 'owned'>) {
  return choosePass({
    backlog: new Set(),
    announced: new Set(),
    full: false,
    backlogPairsPerPass: 2,
    ...state,
  });
}

describe('Choosing what a projector pass reads', () => {
  const owned = new Set([0, 1, 2, 3].flatMap((p) => [pair('users', p), pair('fantasy-team', p)]));

  it('When the users projection has a backlog in every partition, then a pass carries two of them beside the announced team change', () => {
    const backlog = new Set([0, 1, 2, 3].map((p) => pair('users', p)));
    const choice = pass({ owned, backlog, announced: new Set([pair('fantasy-team', 2)]) });
    expect(choice.read).toEqual([pair('users', 0), pair('users', 1), pair('fantasy-team', 2)]);
    expect(choice.deferred).toEqual([pair('users', 2), pair('users', 3)]);
  });

  it('When a backlogged pair is announced, then it takes half the places before those that waited longer', () => {
    const backlog = new Set([0, 1, 2, 3].map((p) => pair('users', p)));
    const choice = pass({ owned, backlog, announced: new Set([pair('users', 2), pair('users', 3)]) });
    expect(choice.read).toEqual([pair('users', 0), pair('users', 2)]);
    expect(choice.deferred).toEqual([pair('users', 1), pair('users', 3)]);
  });

  it('When a full pass is due, then every pair without a backlog is read, and still only two with one', () => {
    const backlog = new Set([pair('users', 1), pair('users', 2), pair('users', 3)]);
    const choice = pass({ owned, backlog, full: true });
    expect(choice.read).toHaveLength(owned.size - 1);
    expect(choice.read).not.toContain(pair('users', 3));
    expect(choice.deferred).toEqual([pair('users', 3)]);
  });

  it('When a backlogged pair is no longer owned, then it is neither read nor kept', () => {
    const choice = pass({ owned, backlog: new Set([pair('players', 0), pair('users', 0)]) });
    expect(choice.read).toEqual([pair('users', 0)]);
    expect(choice.deferred).toEqual([]);
  });

  const states = fc
    .record({
      partitions: fc.integer({ min: 1, max: 16 }),
      backlogged: fc.array(fc.integer({ min: 0, max: 40 }), { maxLength: 40 }),
      announced: fc.array(fc.integer({ min: 0, max: 40 }), { maxLength: 40 }),
      full: fc.boolean(),
      backlogPairsPerPass: fc.integer({ min: 0, max: 12 }),
    })
    .map(({ partitions, backlogged, announced, full, backlogPairsPerPass }) => {
      const ids = (n: number) => pair(n % 2 ? 'users' : 'fantasy-team', Math.floor(n / 2));
      const ownedIds = Array.from({ length: partitions * 2 }, (_, n) => ids(n));
      return {
        owned: new Set(ownedIds),
        backlog: new Set(backlogged.map(ids)),
        announced: new Set(announced.map(ids)),
        full,
        backlogPairsPerPass,
      };
    });

  it('Whatever the state, a pass reads only owned pairs, at most the share of backlogged ones (half to the announced), every announced pair without one, and loses no backlog', () => {
    fc.assert(
      fc.property(states, (state) => {
        const { read, deferred } = choosePass(state);
        const share = Math.max(1, state.backlogPairsPerPass);
        const backlogged = [...state.backlog].filter((id) => state.owned.has(id));
        const carried = read.filter((id) => state.backlog.has(id));
        expect(read.every((id) => state.owned.has(id))).toBe(true);
        expect(carried.length).toBeLessThanOrEqual(share);
        expect(carried.length).toBe(Math.min(share, backlogged.length));
        expect(new Set([...carried, ...deferred])).toEqual(new Set(backlogged));
        expect(deferred.filter((id) => carried.includes(id))).toEqual([]);
        for (const id of state.owned) {
          if (!state.backlog.has(id) && (state.full || state.announced.has(id))) expect(read).toContain(id);
        }
        // Half the places go to announced pairs, the rest in the order they waited.
        const announcedBacklogged = backlogged.filter((id) => state.announced.has(id));
        const quota = Math.min(Math.floor(share / 2), announcedBacklogged.length);
        expect(carried.filter((id) => state.announced.has(id)).length).toBeGreaterThanOrEqual(quota);
        const byTurn = backlogged.filter((id) => !announcedBacklogged.slice(0, quota).includes(id));
        expect(new Set(carried)).toEqual(
          new Set([...announcedBacklogged.slice(0, quota), ...byTurn.slice(0, carried.length - quota)]),
        );
      }),
    );
  });

  it('When every carried pair stays backlogged and others are announced, then each pair is carried within ceil(pairs / half the share) passes', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 1, max: 64 }),
        fc.integer({ min: 1, max: 12 }),
        fc.array(fc.array(fc.nat(63), { maxLength: 32 }), { minLength: 1, maxLength: 8 }),
        (pairs, share, announcements) => {
          const ids = Array.from({ length: pairs }, (_, n) => pair('users', n));
          let backlog = new Set(ids);
          const lastCarried = new Map<string, number>();
          const passes = Math.ceil(pairs / Math.ceil(share / 2));
          for (let n = 0; n < passes * 3; n++) {
            const announced = announcements[n % announcements.length] ?? [];
            const { read, deferred } = choosePass({
              owned: new Set(ids),
              backlog,
              announced: new Set(announced.map((p) => pair('users', p))),
              full: false,
              backlogPairsPerPass: share,
            });
            for (const id of read) {
              expect(n - (lastCarried.get(id) ?? -1)).toBeLessThanOrEqual(passes);
              lastCarried.set(id, n);
            }
            // As the projector keeps it: those left waiting ahead of those found full again.
            backlog = new Set([...deferred, ...read]);
          }
          expect(lastCarried.size).toBe(pairs);
        },
      ),
    );
  });
});
