import type { SeedPlayerRow } from '../../shared/importers/player-seeding/player-seeding.importer';
import type { PlayerSeasonStats } from '../../shared/sport/sport.model';

/** Player n's platform id: `00000000-0000-4000-a000-<n as 12 digits>`, unique per n. */
export function playerPlatformId(n: number): string {
  return `00000000-0000-4000-a000-${String(n).padStart(12, '0')}`;
}

/**
 * Fields to replace in seedPlayer's row. Values are not checked, so a test can send one the
 * importer refuses; `stats` are merged into the default stats.
 */
export type SeedPlayerOverrides = {
  readonly [Field in Exclude<keyof SeedPlayerRow, 'stats'>]?: unknown;
} & { readonly stats?: { readonly [Field in keyof PlayerSeasonStats]?: unknown } };

/**
 * Player n (from 1) as a row of PlayerSeeding's `players`: feed id 100+n, fantasy id 9000+n, league
 * id `L-n`, platform id playerPlatformId(n), names that differ per n; stats with rating 50+n/2,
 * price 100,000+n, one position, and a round-3 breakdown for odd n.
 */
export function seedPlayer(n: number, overrides: SeedPlayerOverrides = {}): SeedPlayerRow {
  const { stats, ...identity } = overrides;
  return {
    feedId: 100 + n,
    feedFirstName: `First${n}`,
    feedLastName: `Last${n}`,
    feedFullName: `First${n} Last${n}`,
    feedShortName: `F. Last${n}`,
    leaguePlayerId: `L-${n}`,
    leagueFirstName: `LFirst${n}`,
    leagueLastName: `LLast${n}`,
    fantasyId: 9000 + n,
    platformId: playerPlatformId(n),
    platformFullName: `Platform ${n}`,
    platformSlug: `player-${n}`,
    stats: {
      rating: 50 + n / 2,
      price: 100_000 + n,
      fantasyPositions: [n % 4],
      breakdown: n % 2 ? { '3': { projectedPoints: n, priceDelta: -n } } : null,
      ...stats,
    },
    ...identity,
  } as SeedPlayerRow;
}
