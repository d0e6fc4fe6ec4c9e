import { fantasyTeamProjection } from '../../shared/fantasy-team/fantasy-team.projection';
import type { AnyProjection } from '../../shared/projections/projection';
import { playersProjection } from '../../shared/sport/players.projection';
import { seasonsProjection } from '../../shared/sport/seasons.projection';
import { usersProjection } from '../../shared/user/users.projection';

/** Every projection the projector keeps and the rebuild script rebuilds. */
export const ALL_PROJECTIONS: readonly AnyProjection[] = [
  fantasyTeamProjection,
  playersProjection,
  seasonsProjection,
  usersProjection,
];
