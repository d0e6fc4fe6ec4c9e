import { fantasyTeamProjection } from './fantasy-team/fantasy-team.projection';
import type { Projection } from './projection';

/** Every projection the projector keeps and the rebuild script rebuilds. */
export const ALL_PROJECTIONS: readonly Projection<unknown>[] = [fantasyTeamProjection];
