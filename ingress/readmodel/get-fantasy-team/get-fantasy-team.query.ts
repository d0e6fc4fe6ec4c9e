import { SELECTION_STATUS } from '../../../shared/fantasy-team/fantasy-team.commands';
import type { RedisClient } from '../../../shared/redis/connections';
import type { Keys } from '../../../shared/redis/keys';
import { guid } from '../../../shared/validation';
import { closedObject, GUID_SCHEMA } from '../../http/json-schema';
import { listingSchema, notFoundListing } from '../listing';
import { defineQuery, querySchema, type RegisteredQuery } from '../query-definition';
import { MIN_VERSION_SCHEMA, type ProjectionWaits } from '../read-your-writes';
import { readVisibleTeam } from './visible-team';

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
  readonly query: { readonly id: string; readonly minVersion?: number };
}

/**
 * `GetFantasyTeam`: the team's projection, to its owner or an Admin. Anyone else, and a missing
 * team, get the spec's 4.1 rule 2 answer (404, empty results): nobody learns a team exists. With
 * `minVersion`, answered once the team's projection has that version (ADR 0019).
 */
export function getFantasyTeamQuery(redis: RedisClient, keys: Keys, waits: ProjectionWaits): RegisteredQuery {
  return defineQuery<GetFantasyTeamBody>({
    queryType: 'GetFantasyTeam',
    description: 'One fantasy team: name, season, owner, linked identity, roster, version.',
    schemes: ['Basic', 'Bearer'],
    roles: [],
    schema: querySchema<GetFantasyTeamBody>('GetFantasyTeam', {
      id: guid().required(),
      minVersion: MIN_VERSION_SCHEMA,
    }),
    response: listingSchema('GetFantasyTeamResult', FANTASY_TEAM_VIEW_SCHEMA),
    answersNotFoundListing: true,
    async handle({ principal, body }) {
      const team = await readVisibleTeam(redis, keys, waits, principal, body.query);
      if (!team) {
        return notFoundListing();
      }
      return { body: { results: [team], totalCount: 1 } };
    },
  });
}
