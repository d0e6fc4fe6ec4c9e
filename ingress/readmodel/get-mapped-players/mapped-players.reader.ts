import type { Redis } from 'ioredis';

import { DEFAULT_SEASON } from '../../../shared/domain/fantasy-team/fantasy-team.commands';
import type { PlayerIdentity } from '../../../shared/domain/sport/sport.model';
import type { PlayerView } from '../../../shared/projections/sport/players.projection';
import type { Keys } from '../../../shared/redis/keys';

/** Filters of GetMappedPlayers; each is answered from an index of the players projection. */
export interface MappedPlayerFilter {
  readonly feedId?: number;
  readonly fantasyId?: number;
  readonly leaguePlayerId?: string;
  readonly platformId?: string;
  readonly season?: string;
}

/** Spec 2.4 in camelCase; `toMappedPlayer` writes the members in the spec's order. */
export type MappedPlayer = PlayerIdentity & {
  readonly fantasyCompositeId: string;
  readonly platformId: string;
};

/** A listing: how many match, and the matching players from `skip` on, page by page. */
export interface MappedPlayerListing {
  readonly totalCount: number;
  readonly pages: AsyncIterable<readonly MappedPlayer[]> | Iterable<readonly MappedPlayer[]>;
}

/**
 * The composite id's season: the one asked for, else the player's latest season with stats
 * (a player is seeded with a season, so it has one).
 */
function seasonFor(player: PlayerView, filter: MappedPlayerFilter): string {
  if (filter.season) return filter.season;
  const seasons = Object.keys(player.seasons).sort();
  return seasons.at(-1) ?? DEFAULT_SEASON;
}

export function toMappedPlayer(player: PlayerView, filter: MappedPlayerFilter): MappedPlayer {
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
    fantasyCompositeId: `${player.fantasyId}-${seasonFor(player, filter)}`,
    platformId: player.platformId,
    platformFullName: player.platformFullName,
    platformSlug: player.platformSlug,
  };
}

/** The order of every answer: by feed id, then platform id (the sorted set's own order). */
function byFeedId(a: PlayerView, b: PlayerView): number {
  return a.feedId - b.feedId || (a.platformId < b.platformId ? -1 : a.platformId > b.platformId ? 1 : 0);
}

/**
 * Reads the players projection for GetMappedPlayers without ever holding the whole table: the
 * unfiltered (or season-only) listing walks a sorted set by rank, a page of documents at a
 * time; an identifier filter narrows to the few players its index names first.
 */
export class MappedPlayersReader {
  constructor(
    private readonly redis: Redis,
    private readonly keys: Keys,
    private readonly pageSize = 500,
  ) {}

  async list(
    filter: MappedPlayerFilter,
    skip: number,
    take: number | undefined,
  ): Promise<MappedPlayerListing> {
    const candidates = await this.candidatesByIdentifier(filter);
    if (candidates !== undefined) return this.listCandidates(candidates, filter, skip, take);

    const index =
      filter.season === undefined
        ? this.keys.sport.playersByFeedId()
        : this.keys.sport.playersInSeason(filter.season);
    const totalCount = await this.redis.zcard(index);
    const end = take === undefined ? totalCount : Math.min(totalCount, skip + take);
    return { totalCount, pages: this.walk(index, skip, end, filter) };
  }

  /** Platform ids every given identifier filter agrees on; undefined when none is given. */
  private async candidatesByIdentifier(filter: MappedPlayerFilter): Promise<string[] | undefined> {
    const { sport } = this.keys;
    const sets: string[][] = [];
    if (filter.platformId !== undefined) sets.push([filter.platformId]);
    if (filter.feedId !== undefined) {
      sets.push(await this.redis.zrange(sport.playersByFeedId(), filter.feedId, filter.feedId, 'BYSCORE'));
    }
    if (filter.fantasyId !== undefined) {
      const found = await this.redis.hget(sport.playersByFantasyId(), String(filter.fantasyId));
      sets.push(found === null ? [] : [found]);
    }
    if (filter.leaguePlayerId !== undefined) {
      sets.push(await this.redis.smembers(sport.playersByLeaguePlayerId(filter.leaguePlayerId)));
    }
    const [first, ...rest] = sets;
    if (!first) return undefined;
    return first.filter((id) => rest.every((set) => set.includes(id)));
  }

  private async listCandidates(
    platformIds: readonly string[],
    filter: MappedPlayerFilter,
    skip: number,
    take: number | undefined,
  ): Promise<MappedPlayerListing> {
    const players = (await this.documents(platformIds))
      .filter((player) => filter.season === undefined || filter.season in player.seasons)
      .sort(byFeedId);
    const page = players.slice(skip, take === undefined ? undefined : skip + take);
    // A handful of players (one identifier's worth): one page, already in hand.
    return { totalCount: players.length, pages: [page.map((player) => toMappedPlayer(player, filter))] };
  }

  private async *walk(
    index: string,
    start: number,
    end: number,
    filter: MappedPlayerFilter,
  ): AsyncGenerator<readonly MappedPlayer[]> {
    for (let from = start; from < end; from += this.pageSize) {
      const to = Math.min(end, from + this.pageSize) - 1;
      const platformIds = await this.redis.zrange(index, from, to);
      if (platformIds.length === 0) return;
      // A player removed between the two reads (a concurrent rebuild) is left out, not answered null.
      yield (await this.documents(platformIds)).map((player) => toMappedPlayer(player, filter));
    }
  }

  private async documents(platformIds: readonly string[]): Promise<PlayerView[]> {
    if (platformIds.length === 0) return [];
    const stored = await this.redis.mget(...platformIds.map((id) => this.keys.sport.player(id)));
    return stored
      .filter((json): json is string => json !== null)
      .map((json) => JSON.parse(json) as PlayerView);
  }
}
