import type { Redis } from 'ioredis';
import Joi from 'joi';

import { DEFAULT_SEASON } from '../../../shared/domain/fantasy-team/fantasy-team.commands';
import {
  DEFAULT_FINAL_ROUND,
  DEFAULT_ROUND,
  type PlayerSeasonStats,
} from '../../../shared/domain/sport/sport.model';
import {
  fantasyTeamProjection,
  type FantasyTeamView,
} from '../../../shared/projections/fantasy-team/fantasy-team.projection';
import type { SeasonRounds } from '../../../shared/projections/sport/seasons.projection';
import type { Keys } from '../../../shared/redis/keys';
import { isOwnerOrAdmin } from '../../../shared/roles';
import { guid } from '../../../shared/validation';
import { notFoundListing } from '../listing';
import { defineQuery, querySchema, type RegisteredQuery } from '../query-definition';

export const TEAM_RATING_INPUT_DATA_TYPE = 'TeamRatingInput';

interface GetTeamRatingInputBody {
  readonly query: { readonly id: string; readonly season: string };
  readonly dataType: string;
}

/** Spec 2.3: one roster player's input, keyed by feed id in `team`. */
export interface TeamRatingPlayerInput extends PlayerSeasonStats {
  readonly selectionStatus: number;
}

/**
 * `GetTeamRatingInputByTeamId` (spec 4.1): the team's roster enriched with each player's stats
 * for the season, keyed by feed id, with the season's rounds. Two round trips whatever the
 * roster's size: the team's document, then one pipeline reading the participant -> feed id map,
 * the season's stats and its rounds.
 */
export function getTeamRatingInputQuery(redis: Redis, keys: Keys): RegisteredQuery {
  return defineQuery<GetTeamRatingInputBody>({
    queryType: 'GetTeamRatingInputByTeamId',
    description: "A team's roster with each player's rating, price, positions and breakdown for a season.",
    schemes: ['Bearer'],
    roles: ['Member'],
    schema: querySchema<GetTeamRatingInputBody>(
      'GetTeamRatingInputByTeamId',
      {
        id: guid().required(),
        season: Joi.string()
          .pattern(/^\d{4}$/)
          .default(DEFAULT_SEASON)
          .messages({ 'string.pattern.base': '{{#label}} must be a 4-digit year' }),
      },
      { dataType: Joi.string().valid(TEAM_RATING_INPUT_DATA_TYPE).required() },
    ),
    async handle({ principal, body, requestId }) {
      const { id, season } = body.query;
      // 1. The team, loaded directly by id (rule 3); missing or not the caller's: rule 2's answer.
      const stored = await redis.get(fantasyTeamProjection.documentKey(keys, id));
      const team = stored === null ? null : (JSON.parse(stored) as FantasyTeamView);
      if (!team || !isOwnerOrAdmin(principal, team.ownerUserId)) return notFoundListing();

      // 2. Feed ids, stats and rounds in one pipeline (one round trip).
      const participantIds = team.roster.map((slot) => slot.participantId);
      const pipeline = redis.pipeline();
      if (participantIds.length) {
        pipeline.hmget(keys.sport.participantFeedIds(), ...participantIds);
        pipeline.hmget(keys.sport.seasonStats(season), ...participantIds);
      }
      pipeline.hget(keys.sport.seasonRounds(), season);
      const replies = (await pipeline.exec()) ?? [];
      for (const [error] of replies) if (error) throw error;
      const [feedIds, stats, rounds] = (
        participantIds.length ? replies.map(([, value]) => value) : [[], [], replies[0]?.[1]]
      ) as [(string | null)[], (string | null)[], string | null];

      // 3. Keyed by feed id (rule 4); no stats or no mapping: left out (rule 5).
      const entries: [string, TeamRatingPlayerInput][] = [];
      team.roster.forEach((slot, i) => {
        const feedId = feedIds[i];
        const playerStats = stats[i];
        if (!feedId || !playerStats) return;
        const { rating, breakdown, price, fantasyPositions } = JSON.parse(playerStats) as PlayerSeasonStats;
        entries.push([
          feedId,
          { rating, breakdown, price, selectionStatus: slot.selectionStatus, fantasyPositions },
        ]);
      });
      const { round, finalRound } = rounds
        ? (JSON.parse(rounds) as SeasonRounds)
        : { round: DEFAULT_ROUND, finalRound: DEFAULT_FINAL_ROUND };
      return {
        body: {
          results: [{ team: Object.fromEntries(entries), round, finalRound }],
          totalCount: 1,
          requestId,
        },
      };
    },
  });
}
