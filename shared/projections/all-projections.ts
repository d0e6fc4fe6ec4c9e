import { fantasyTeamProjection } from './fantasy-team/fantasy-team.projection';
import type { AnyProjection } from './projection';
import { playersProjection } from './sport/players.projection';
import { seasonsProjection } from './sport/seasons.projection';
import { usersProjection } from './users/users.projection';

/** Every projection the projector keeps and the rebuild script rebuilds. */
export const ALL_PROJECTIONS: readonly AnyProjection[] = [
  fantasyTeamProjection,
  playersProjection,
  seasonsProjection,
  usersProjection,
];
