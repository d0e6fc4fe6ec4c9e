import type { PlayerIdentity } from './sport.model';

/** Where the items for "each player's latest season" are kept, beside those of each season. */
export const LATEST_SEASON = 'latest';

/** GetMappedPlayers' result item: spec 2.4 in camelCase. */
export type MappedPlayer = PlayerIdentity & {
  readonly fantasyCompositeId: string;
  readonly platformId: string;
};

/** The answer item of a player for one season, members in the spec's order (2.4). */
export function toMappedPlayer(
  player: PlayerIdentity & { readonly platformId: string },
  season: string,
): MappedPlayer {
  return {
    feedId: player.feedId,
    feedFirstName: player.feedFirstName,
    feedLastName: player.feedLastName,
    feedFullName: player.feedFullName,
    feedShortName: player.feedShortName,
    leaguePlayerId: player.leaguePlayerId,
    leagueFirstName: player.leagueFirstName,
    leagueLastName: player.leagueLastName,
    fantasyId: player.fantasyId,
    fantasyCompositeId: `${player.fantasyId}-${season}`,
    platformId: player.platformId,
    platformFullName: player.platformFullName,
    platformSlug: player.platformSlug,
  };
}
