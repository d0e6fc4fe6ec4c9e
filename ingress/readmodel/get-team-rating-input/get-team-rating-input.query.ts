import Joi from 'joi';

import { DEFAULT_SEASON } from '../../../shared/fantasy-team/fantasy-team.commands';
import { SELECTION_STATUS } from '../../../shared/fantasy-team/fantasy-team.commands';
import type { RedisClient } from '../../../shared/redis/connections';
import type { Keys } from '../../../shared/redis/keys';
import { completeRatingInputEntry } from '../../../shared/sport/rating-input';
import type { SeasonRounds } from '../../../shared/sport/seasons.projection';
import { DEFAULT_FINAL_ROUND, DEFAULT_ROUND } from '../../../shared/sport/sport.model';
import { guid, seasonYear } from '../../../shared/validation';
import { closedObject } from '../../http/json-schema';
import { readVisibleTeam } from '../get-fantasy-team/visible-team';
import { listingSchema, notFoundListing } from '../listing';
import { defineQuery, querySchema, type RegisteredQuery } from '../query-definition';
import { MIN_VERSION_SCHEMA, type ProjectionWaits } from '../read-your-writes';

export const TEAM_RATING_INPUT_DATA_TYPE = 'TeamRatingInput';

/** TeamRatingPlayerInput (spec 2.3). */
const TEAM_RATING_PLAYER_INPUT_SCHEMA = closedObject(
  {
    rating: { type: ['number', 'null'], description: "The player's current fantasy rating." },
    breakdown: {
      type: ['object', 'null'],
      description: 'Per round (the key): projected points and price delta.',
      patternProperties: {
        '^\\d+$': closedObject({ projectedPoints: { type: 'number' }, priceDelta: { type: 'number' } }),
      },
      additionalProperties: false,
    },
    price: { type: 'integer', format: 'int64', description: "The player's current fantasy price." },
    selectionStatus: {
      type: 'integer',
      enum: Object.values(SELECTION_STATUS),
      description: '0 Captain, 1 ViceCaptain, 2 Selected, 3 Reserve, 4 Bench.',
    },
    fantasyPositions: { type: 'array', items: { type: 'integer' } },
  },
  [],
  { title: 'TeamRatingPlayerInput' },
);

/** The team rating input result item (spec 2.2). */
const TEAM_RATING_INPUT_SCHEMA = closedObject(
  {
    team: {
      type: 'object',
      description: 'Keyed by feed player id.',
      patternProperties: { '^\\d+$': TEAM_RATING_PLAYER_INPUT_SCHEMA },
      additionalProperties: false,
    },
    round: { type: 'integer', description: `Current round; ${DEFAULT_ROUND} when the season has none.` },
    finalRound: {
      type: 'integer',
      description: `Final round; ${DEFAULT_FINAL_ROUND} when the season has none.`,
    },
  },
  [],
  { title: 'TeamRatingInput' },
);

interface GetTeamRatingInputBody {
  readonly query: { readonly id: string; readonly season: string; readonly minVersion?: number };
  readonly dataType: string;
}

/**
 * `GetTeamRatingInputByTeamId` (spec 4.1): the team's roster enriched with each player's stats
 * for the season, keyed by feed id, with the season's rounds. Two round trips whatever the
 * roster's size: the team's document, then the roster's ready-made entries (the players
 * projection joins participant -> feed id and the season's stats in advance) with the rounds.
 * The answer is joined as text: nothing per player is parsed or serialised per request. With
 * `minVersion` (the team's version), answered once the team's projection has it (ADR 0019).
 */
export function getTeamRatingInputQuery(
  redis: RedisClient,
  keys: Keys,
  waits: ProjectionWaits,
): RegisteredQuery {
  return defineQuery<GetTeamRatingInputBody>({
    queryType: 'GetTeamRatingInputByTeamId',
    description: "A team's roster with each player's rating, price, positions and breakdown for a season.",
    schemes: ['Bearer'],
    roles: ['Member'],
    schema: querySchema<GetTeamRatingInputBody>(
      'GetTeamRatingInputByTeamId',
      {
        id: guid().required(),
        season: seasonYear().default(DEFAULT_SEASON),
        minVersion: MIN_VERSION_SCHEMA,
      },
      { dataType: Joi.string().valid(TEAM_RATING_INPUT_DATA_TYPE).required() },
    ),
    response: listingSchema('GetTeamRatingInputByTeamIdResult', TEAM_RATING_INPUT_SCHEMA, {
      requestId: {
        type: 'string',
        description: "The request's id (its X-Request-Id): a GUID unless the caller sent an id of its own.",
      },
    }),
    answersNotFoundListing: true,
    async handle({ principal, body, requestId }) {
      const { season } = body.query;
      // 1. The team, loaded directly by id (rule 3); missing or not the caller's: rule 2's answer.
      const team = await readVisibleTeam(redis, keys, waits, principal, body.query);
      if (!team) return notFoundListing();

      // 2. Each roster player's ready-made entry for the season, and the season's rounds: one
      // round trip (the two commands are pipelined automatically).
      const participantIds = team.roster.map((slot) => slot.participantId);
      const [entries, rounds] = await Promise.all([
        participantIds.length ? redis.hmget(keys.sport.ratingInputs(season), ...participantIds) : [],
        redis.hget(keys.sport.seasonRounds(), season),
      ]);

      // 3. Keyed by feed id (rule 4), in feed id order; no stats or no mapping: left out (rule 5).
      const byFeedId = new Map<number, string>();
      team.roster.forEach((slot, i) => {
        const entry = entries[i];
        if (!entry) return;
        const { feedId, json } = completeRatingInputEntry(entry, slot.selectionStatus);
        byFeedId.set(feedId, json);
      });
      const teamJson = [...byFeedId.keys()]
        .sort((a, b) => a - b)
        .map((feedId) => byFeedId.get(feedId))
        .join(',');
      const { round, finalRound } = rounds
        ? (JSON.parse(rounds) as SeasonRounds)
        : { round: DEFAULT_ROUND, finalRound: DEFAULT_FINAL_ROUND };
      return {
        json:
          `{"results":[{"team":{${teamJson}},"round":${round},"finalRound":${finalRound}}],` +
          `"totalCount":1,"requestId":${JSON.stringify(requestId)}}`,
      };
    },
  });
}
