import Joi from 'joi';

import type { RedisClient } from '../../../shared/redis/connections';
import type { Keys } from '../../../shared/redis/keys';
import { playersProjection, type PlayerView } from '../../../shared/sport/players.projection';
import { guid, long, seasonYear, text } from '../../../shared/validation';
import { closedObject, GUID_SCHEMA } from '../../http/json-schema';
import { listingSchema } from '../listing';
import { defineQuery, querySchema, type RegisteredQuery } from '../query-definition';
import { MIN_VERSION_SCHEMA, type ProjectionWaits } from '../read-your-writes';
import {
  type MappedPlayerFilter,
  type MappedPlayerListing,
  MappedPlayersReader,
} from './mapped-players.reader';

/** The largest page a caller may ask for; without `take` the whole table is streamed. */
export const MAX_MAPPED_PLAYERS_TAKE = 1000;

const INT64 = { type: 'integer', format: 'int64' } as const;
const TEXT = { type: 'string' } as const;

/** A result item of GetMappedPlayers: spec 2.4 in camelCase, members in the spec's order. */
const MAPPED_PLAYER_SCHEMA = closedObject(
  {
    feedId: { ...INT64, description: 'Player id in the feed.' },
    feedFirstName: TEXT,
    feedLastName: TEXT,
    feedFullName: TEXT,
    feedShortName: TEXT,
    leaguePlayerId: { ...TEXT, description: 'Player id in the league database.' },
    leagueFirstName: TEXT,
    leagueLastName: TEXT,
    fantasyId: { ...INT64, description: 'Player id in the fantasy game.' },
    fantasyCompositeId: { ...TEXT, pattern: '^\\d+-\\d{4}$', description: '`<fantasyId>-<season>`.' },
    platformId: { ...GUID_SCHEMA, type: ['string', 'null'], description: 'Platform participant id.' },
    platformFullName: TEXT,
    platformSlug: TEXT,
  },
  [],
  { title: 'MappedPlayer' },
);

interface GetMappedPlayersBody {
  readonly query: MappedPlayerFilter & { readonly minVersion?: number };
  readonly skip: number;
  readonly take?: number;
}

/** `{"results":[...],"totalCount":N}`, written a page at a time from the items' own JSON. */
async function* listingJson(listing: MappedPlayerListing): AsyncGenerator<string> {
  let first = true;
  for await (const page of listing.pages) {
    if (page.length === 0) continue;
    const items = page.join(',');
    yield first ? `{"results":[${items}` : `,${items}`;
    first = false;
  }
  yield `${first ? '{"results":[' : ''}],"totalCount":${listing.totalCount}}`;
}

/**
 * `GetMappedPlayers` (spec 4.2): every mapped player, for machines signing in by Basic with the
 * ServiceAccount role, while the sport-core module is enabled. Ordered by feed id; optionally
 * paged (skip, take) and filtered by one identifier or a season, each from its own index. With
 * `platformId` (the player aggregate's id), `minVersion` answers once the players projection has
 * that player at that version (ADR 0019); without one no single aggregate is named, so it is refused.
 */
export function getMappedPlayersQuery(
  redis: RedisClient,
  keys: Keys,
  waits: ProjectionWaits,
): RegisteredQuery {
  const reader = new MappedPlayersReader(redis, keys);
  return defineQuery<GetMappedPlayersBody>({
    queryType: 'GetMappedPlayers',
    description:
      'Every mapped player (feed, league, fantasy and platform identities), by feed id; optional skip/take and filters.',
    schemes: ['Basic'],
    roles: ['ServiceAccount'],
    module: 'sport-core',
    schema: querySchema<GetMappedPlayersBody>(
      'GetMappedPlayers',
      {
        feedId: long().min(1),
        fantasyId: long().min(1),
        // Players without a league id are not indexed under '': an empty filter is refused, and says so (minLength 1).
        leaguePlayerId: text({ min: 1, max: 100 }),
        platformId: guid(),
        season: seasonYear(),
        minVersion: MIN_VERSION_SCHEMA,
      },
      {
        skip: Joi.number().strict().integer().min(0).max(Number.MAX_SAFE_INTEGER).default(0),
        take: Joi.number().strict().integer().min(1).max(MAX_MAPPED_PLAYERS_TAKE),
      },
      (query) => query.with('minVersion', 'platformId'),
    ),
    response: listingSchema('GetMappedPlayersResult', MAPPED_PLAYER_SCHEMA),
    async handle({ principal, body }) {
      const { platformId, minVersion } = body.query;
      if (platformId !== undefined && minVersion !== undefined) {
        await waits.until({
          projection: playersProjection.name,
          aggregateId: platformId,
          minVersion,
          reader: principal,
          noun: 'player',
          read: async () => {
            const stored = await redis.get(playersProjection.documentKey(keys, platformId));
            return stored === null ? 0 : (JSON.parse(stored) as PlayerView).version;
          },
          versionOf: (version) => version,
        });
      }
      const listing = await reader.list(body.query, body.skip, body.take);
      return { jsonPieces: listingJson(listing) };
    },
  });
}
