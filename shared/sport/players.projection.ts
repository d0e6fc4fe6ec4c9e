import { DEFAULT_SEASON } from '../fantasy-team/fantasy-team.commands';
import type { IndexEntry, Projection } from '../projections/projection';
import { LATEST_SEASON, toMappedPlayer } from './mapped-player';
import { playerDecider, type PlayerState } from './player.decider';
import { ratingInputEntry } from './rating-input';
import type { PlayerEvent } from './sport.events';
import { canonicalIdentity, type PlayerIdentity, type PlayerSeasonStats } from './sport.model';
import { sportProjectionBase } from './sport-projection';

/** A mapped player as the players projection keeps it: identity, stats by season, version. */
export type PlayerView = PlayerIdentity & {
  readonly platformId: string;
  readonly seasons: Readonly<Record<string, PlayerSeasonStats>>;
  readonly version: number;
};

const NAME = 'players';

/**
 * The mapped-player table and what the rating input reads: one document per player, indexed by
 * feed id (the answer order), fantasy id, league player id and season, plus the participant
 * (platform id) -> feed id map and, per season, each player's stats as a ready-made rating-input
 * entry and its GetMappedPlayers item. Every key sits under the `{sport}` tag.
 */
export const playersProjection: Projection<PlayerView> = {
  ...sportProjectionBase(NAME),
  aggregateType: playerDecider.aggregateType,
  documentKey: (keys, platformId) => keys.sport.player(platformId),
  keyPatterns: (keys) => keys.sport.patterns(NAME, 'player:*', 'players:*', 'participant-feed-ids'),

  // Reuses the aggregate's own evolve, so the table can never disagree with the write side.
  evolve(doc, event) {
    if (doc && event.version <= doc.version) return doc; // already applied
    const before: PlayerState = doc && {
      platformId: doc.platformId,
      identity: canonicalIdentity(doc),
      seasons: doc.seasons,
    };
    const after = playerDecider.evolve(before, { type: event.eventType, data: event.data } as PlayerEvent);
    if (after === null) return null;
    return {
      platformId: after.platformId,
      ...after.identity,
      seasons: after.seasons,
      version: event.version,
    };
  },

  indexEntries(player, keys) {
    const { platformId, feedId } = player;
    const entries: IndexEntry[] = [
      { kind: 'zset', key: keys.sport.playersByFeedId(), member: platformId, score: feedId },
      {
        kind: 'hash',
        key: keys.sport.playersByFantasyId(),
        field: String(player.fantasyId),
        value: platformId,
      },
      { kind: 'hash', key: keys.sport.participantFeedIds(), field: platformId, value: String(feedId) },
    ];
    // A player the league database does not know (no league id) is not findable by one.
    if (player.leaguePlayerId) {
      entries.push({
        kind: 'set',
        key: keys.sport.playersByLeaguePlayerId(player.leaguePlayerId),
        member: platformId,
      });
    }
    const seasons = Object.entries(player.seasons).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
    for (const [season, stats] of seasons) {
      entries.push(
        { kind: 'zset', key: keys.sport.playersInSeason(season), member: platformId, score: feedId },
        {
          kind: 'hash',
          key: keys.sport.ratingInputs(season),
          field: platformId,
          value: ratingInputEntry(feedId, stats),
        },
        {
          kind: 'hash',
          key: keys.sport.mappedPlayers(season),
          field: platformId,
          value: JSON.stringify(toMappedPlayer(player, season)),
        },
      );
    }
    // Without a season filter, the composite id names the player's latest season.
    entries.push({
      kind: 'hash',
      key: keys.sport.mappedPlayers(LATEST_SEASON),
      field: platformId,
      value: JSON.stringify(toMappedPlayer(player, seasons.at(-1)?.[0] ?? DEFAULT_SEASON)),
    });
    return entries;
  },
};
