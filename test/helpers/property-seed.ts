import fc from 'fast-check';

/**
 * The seed of this test file's property runs: `PROPERTY_SEED` (or its older name `HOSTILE_SEED`)
 * replays a run, otherwise one is drawn.
 * Set as fast-check's global seed (jest setupFilesAfterEnv), so every `fc.assert` of the file draws
 * from it and a failing property names it; checks made after a run (how many cases it exercised)
 * name it through expectExercised.
 */
export const PROPERTY_SEED =
  Number.parseInt(process.env.PROPERTY_SEED ?? process.env.HOSTILE_SEED ?? '', 10) || drawSeed();

function drawSeed(): number {
  return Math.floor(Math.random() * 2 ** 31) || 1;
}

/** What a failure prints to replay this file's draws. */
export const PROPERTY_REPLAY = `PROPERTY_SEED=${PROPERTY_SEED}`;

export function usePropertySeed(): void {
  fc.configureGlobal({ ...fc.readConfigureGlobal(), seed: PROPERTY_SEED });
}

/**
 * The fewest successes a run of `runs` independent draws, each a success with probability at least
 * `share`, falls below once in about a billion runs: six standard deviations under the mean of the
 * binomial. A property's "not vacuous" bound follows from what it draws, not from a lucky number.
 */
export function leastExpected(runs: number, share: number): number {
  const mean = runs * share;
  const deviation = Math.sqrt(runs * share * (1 - share));
  return Math.max(1, Math.floor(mean - 6 * deviation));
}

/**
 * Fails, naming the seed, when a property exercised fewer cases than `least`: a run whose generator
 * stopped making the cases the property is about proves nothing.
 */
export function expectExercised(what: string, count: number, least: number): void {
  if (count < least) {
    throw new Error(
      `${what}: ${count} cases exercised, fewer than the ${least} the draws make certain; replay with ${PROPERTY_REPLAY}`,
    );
  }
}
