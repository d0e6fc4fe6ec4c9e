import { SELECTION_STATUS } from '../../../shared/domain/fantasy-team/fantasy-team.commands';
import {
  fantasyTeamProjection,
  type FantasyTeamView,
} from '../../../shared/projections/fantasy-team/fantasy-team.projection';
import type { RedisClient } from '../../../shared/redis/connections';
import type { Keys } from '../../../shared/redis/keys';
import { isOwnerOrAdmin } from '../../../shared/roles';
import { guid } from '../../../shared/validation';
import { closedObject, GUID_SCHEMA } from '../../http/json-schema';
import { listingSchema, notFoundListing } from '../listing';
import { defineQuery, querySchema, type RegisteredQuery } from '../query-definition';

const INT64 = { type: 'integer', format: 'int64' } as const;

/** A team's projection (FantasyTeamView). */
export const FANTASY_TEAM_VIEW_SCHEMA = closedObject(
  {
    id: GUID_SCHEMA,
    name: { type: 'string' },
    season: { type: 'string', pattern: '^\\d{4}$' },
    ownerUserId: GUID_SCHEMA,
    fantasyTeamExternalId: { ...INT64, description: '0 when not linked.' },
    fantasyUserId: { ...INT64, description: '0 when not linked.' },
    archived: { type: 'boolean' },
    roster: {
      type: 'array',
      items: closedObject({
        participantId: GUID_SCHEMA,
        selectionStatus: {
          type: 'integer',
          enum: Object.values(SELECTION_STATUS),
          description: '0 Captain, 1 ViceCaptain, 2 Selected, 3 Reserve, 4 Bench.',
        },
      }),
    },
    version: { type: 'integer', minimum: 1, description: "The team's version (for expectedVersion)." },
  },
  [],
  { title: 'FantasyTeam' },
);

interface GetFantasyTeamBody {
  readonly query: { readonly id: string };
}

/**
 * `GetFantasyTeam`: the team's projection, to its owner or an Admin. Anyone else, and a missing
 * team, get the spec's 4.1 rule 2 answer (404, empty results): nobody learns a team exists.
 */
export function getFantasyTeamQuery(redis: RedisClient, keys: Keys): RegisteredQuery {
  return defineQuery<GetFantasyTeamBody>({
    queryType: 'GetFantasyTeam',
    description: 'One fantasy team: name, season, owner, linked identity, roster, version.',
    schemes: ['Basic', 'Bearer'],
    roles: [],
    schema: querySchema<GetFantasyTeamBody>('GetFantasyTeam', { id: guid().required() }),
    response: listingSchema('GetFantasyTeamResult', FANTASY_TEAM_VIEW_SCHEMA),
    answersNotFoundListing: true,
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
