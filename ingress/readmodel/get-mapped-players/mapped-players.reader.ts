import type { RedisClient } from '../../../shared/redis/connections';
import type { Keys } from '../../../shared/redis/keys';
import { LATEST_SEASON } from '../../../shared/sport/mapped-player';

/** Filters of GetMappedPlayers; each is answered from an index of the players projection. */
export interface MappedPlayerFilter {
  readonly feedId?: number;
  readonly fantasyId?: number;
  readonly leaguePlayerId?: string;
  readonly platformId?: string;
  readonly season?: string;
}

/** A listing: how many match, and the matching items (JSON text) from `skip` on, page by page. */
export interface MappedPlayerListing {
  readonly totalCount: number;
  readonly pages: AsyncIterable<readonly string[]> | Iterable<readonly string[]>;
}

/**
 * Reads the players projection for GetMappedPlayers without ever holding the whole table or
 * parsing a document: the projection keeps each player's answer item ready-made (per season, and
 * for its latest season), so a page is one ZRANGE and one HMGET whose strings go out as they are.
 * The unfiltered (or season-only) listing walks a sorted set by rank; an identifier filter narrows
 * to the few players its index names first.
 */
export class MappedPlayersReader {
  constructor(
    private readonly redis: RedisClient,
    private readonly keys: Keys,
    private readonly pageSize = 500,
  ) {}

  async list(
    filter: MappedPlayerFilter,
    skip: number,
    take: number | undefined,
  ): Promise<MappedPlayerListing> {
    const items = this.keys.sport.mappedPlayers(filter.season ?? LATEST_SEASON);
    const candidates = await this.candidatesByIdentifier(filter);
    if (candidates !== undefined) return this.listCandidates(candidates, items, skip, take);

    const index =
      filter.season === undefined
        ? this.keys.sport.playersByFeedId()
        : this.keys.sport.playersInSeason(filter.season);
    const totalCount = await this.redis.zcard(index);
    const end = take === undefined ? totalCount : Math.min(totalCount, skip + take);
    return { totalCount, pages: this.walk(index, items, skip, end) };
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

  /** A handful of players (one identifier's worth), in the listing's order: one page. */
  private async listCandidates(
    platformIds: readonly string[],
    items: string,
    skip: number,
    take: number | undefined,
  ): Promise<MappedPlayerListing> {
    if (platformIds.length === 0) return { totalCount: 0, pages: [] };
    const [found, feedIds] = await Promise.all([
      this.redis.hmget(items, ...platformIds),
      this.redis.hmget(this.keys.sport.participantFeedIds(), ...platformIds),
    ]);
    // No item: not a player, or (with a season filter) no stats that season.
    const matches = platformIds
      .map((platformId, i) => ({ platformId, item: found[i], feedId: Number(feedIds[i]) }))
      .filter((match): match is typeof match & { item: string } => typeof match.item === 'string')
      .sort((a, b) => a.feedId - b.feedId || (a.platformId < b.platformId ? -1 : 1));
    const page = matches.slice(skip, take === undefined ? undefined : skip + take);
    return { totalCount: matches.length, pages: [page.map((match) => match.item)] };
  }

  private async *walk(index: string, items: string, start: number, end: number): AsyncGenerator<string[]> {
    for (let from = start; from < end; from += this.pageSize) {
      const to = Math.min(end, from + this.pageSize) - 1;
      const platformIds = await this.redis.zrange(index, from, to);
      if (platformIds.length === 0) return;
      const found = await this.redis.hmget(items, ...platformIds);
      // A player removed between the two reads (a concurrent rebuild) is left out, not answered null.
      yield found.filter((item): item is string => item !== null);
    }
  }
}
