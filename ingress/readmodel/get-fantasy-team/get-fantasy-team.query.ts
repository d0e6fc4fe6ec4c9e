import type { Redis } from 'ioredis';

import {
  fantasyTeamProjection,
  type FantasyTeamView,
} from '../../../shared/projections/fantasy-team/fantasy-team.projection';
import type { Keys } from '../../../shared/redis/keys';
import { isOwnerOrAdmin } from '../../../shared/roles';
import { guid } from '../../../shared/validation';
import { notFoundListing } from '../listing';
import { defineQuery, querySchema, type RegisteredQuery } from '../query-definition';

interface GetFantasyTeamBody {
  readonly query: { readonly id: string };
}

/**
 * `GetFantasyTeam`: the team's projection, to its owner or an Admin. Anyone else, and a missing
 * team, get the spec's 4.1 rule 2 answer (404, empty results): nobody learns a team exists.
 */
export function getFantasyTeamQuery(redis: Redis, keys: Keys): RegisteredQuery {
  return defineQuery<GetFantasyTeamBody>({
    queryType: 'GetFantasyTeam',
    description: 'One fantasy team: name, season, owner, linked identity, roster, version.',
    schemes: ['Basic', 'Bearer'],
    roles: [],
    schema: querySchema<GetFantasyTeamBody>('GetFantasyTeam', { id: guid().required() }),
    async handle({ principal, body }) {
      const stored = await redis.get(keys.projectionDocument(fantasyTeamProjection.name, body.query.id));
      const team = stored === null ? null : (JSON.parse(stored) as FantasyTeamView);
      if (!team || !isOwnerOrAdmin(principal, team.ownerUserId)) {
        return notFoundListing();
      }
      return { body: { results: [team], totalCount: 1 } };
    },
  });
}
