import {
  fantasyTeamProjection,
  type FantasyTeamView,
} from '../../../shared/fantasy-team/fantasy-team.projection';
import type { RedisClient } from '../../../shared/redis/connections';
import type { Keys } from '../../../shared/redis/keys';
import { isOwnerOrAdmin } from '../../../shared/roles';
import type { Principal } from '../../auth/principal';
import type { ProjectionWaits } from '../read-your-writes';

/**
 * The team's projection when the caller may see it (its owner or an Admin), else null: what
 * GetFantasyTeam and GetTeamRatingInputByTeamId read first. With `minVersion`, once the projection
 * has the team at that version (ADR 0019). A team the caller may not see counts as not there yet,
 * so a stranger's `minVersion` read waits and answers PROJECTION_BEHIND whether the team exists or
 * not: it learns nothing the 404 listing hides.
 */
export async function readVisibleTeam(
  redis: RedisClient,
  keys: Keys,
  waits: ProjectionWaits,
  principal: Principal,
  query: { readonly id: string; readonly minVersion?: number },
): Promise<FantasyTeamView | null> {
  const read = async (): Promise<FantasyTeamView | null> => {
    const stored = await redis.get(fantasyTeamProjection.documentKey(keys, query.id));
    const team = stored === null ? null : (JSON.parse(stored) as FantasyTeamView);
    return team && isOwnerOrAdmin(principal, team.ownerUserId) ? team : null;
  };
  if (query.minVersion === undefined) return read();
  return waits.until({
    projection: fantasyTeamProjection.name,
    aggregateId: query.id,
    minVersion: query.minVersion,
    reader: principal,
    noun: 'fantasy team',
    read,
    versionOf: (team) => team?.version ?? 0,
  });
}
