import type { EventStore } from '../../shared/event-store/event-store';
import { fantasyTeamDecider, type FantasyTeamState } from '../../shared/fantasy-team/fantasy-team.decider';
import type { RedisClient } from '../../shared/redis/connections';
import type { Keys } from '../../shared/redis/keys';
import { registerScripts } from '../../shared/redis/scripts';
import { OWNER_TEAM_SCRIPTS } from './owner-team.scripts';

/**
 * How long a reservation waits for its create to confirm or release it before the next create at
 * the bound checks the team itself. Far above a command's own bounds (LOCK_WAIT_MS, the 2 s command
 * timeout): only a process that died between reserving and answering leaves one behind.
 */
export const TEAM_RESERVATION_MS = 60_000;

/**
 * Bounds the teams one owner holds (MAX_TEAMS_PER_OWNER) and indexes every owner's teams, an
 * Admin's included, so erasing an account can pass them to its tombstone. No client command deletes
 * or transfers a team, so an owner's teams are the ones it created; archived ones count too, or
 * create-and-archive would fill Redis. The index is in another cluster slot than the team, so it
 * cannot join the append's script: a slot is reserved atomically before the append
 * (reserve-owner-team-1.lua), then confirmed or released; a reservation a dead process left is
 * settled against the team's record by a later create at the bound.
 */
export class OwnerTeamLimit {
  constructor(
    private readonly redis: RedisClient,
    private readonly keys: Keys,
    private readonly store: EventStore,
    readonly maxPerOwner: number,
  ) {
    registerScripts(redis, OWNER_TEAM_SCRIPTS);
  }

  /**
   * Holds a slot for `teamId` among the owner's teams; false when the owner is at the bound. An
   * owner that is not `bounded` (an Admin) is never refused, and its team is indexed all the same.
   */
  async reserve(ownerUserId: string, teamId: string, { bounded = true } = {}): Promise<boolean> {
    const key = this.keys.ownerTeams(ownerUserId);
    const team = teamId.toLowerCase();
    for (let attempt = 0; ; attempt++) {
      const now = Date.now();
      const [reserved, ...stale] = await this.redis.reserveOwnerTeam(
        key,
        team,
        bounded ? this.maxPerOwner : Number.MAX_SAFE_INTEGER,
        now,
        now + TEAM_RESERVATION_MS,
      );
      if (reserved === 1) return true;
      if (stale.length === 0 || attempt > 0) return false;
      await Promise.all(stale.map((id) => this.settle(ownerUserId, id)));
    }
  }

  /** The team was created (or had been, by an earlier attempt): its slot is held for good. */
  async confirm(ownerUserId: string, teamId: string): Promise<void> {
    await this.redis.zadd(this.keys.ownerTeams(ownerUserId), '+inf', teamId.toLowerCase());
  }

  /** Nothing was written: the reserved slot is free again (a created team's slot is kept). */
  async release(ownerUserId: string, teamId: string): Promise<void> {
    await this.redis.releaseOwnerTeam(this.keys.ownerTeams(ownerUserId), teamId.toLowerCase());
  }

  /**
   * Indexes every team under its owner once: a deployment upgraded from before an Admin's teams were
   * indexed has them only in the teams' records. A scan of the team records, run once (replicas
   * starting together may each run it: indexing a created team is idempotent).
   */
  async ensureIndexed(): Promise<void> {
    if ((await this.redis.exists(this.keys.ownerTeamsIndexed())) === 1) return;
    for await (const batch of this.store.recordStates<FantasyTeamState>(fantasyTeamDecider.aggregateType)) {
      await Promise.all(
        batch.flatMap(({ aggregateId, state }) =>
          state ? [this.confirm(state.ownerUserId, aggregateId)] : [],
        ),
      );
    }
    await this.redis.set(this.keys.ownerTeamsIndexed(), new Date().toISOString());
  }

  /**
   * A reservation past its deadline: confirmed when the owner's team exists, else released. A
   * create still running after that long that does append confirms its slot again itself.
   */
  private async settle(ownerUserId: string, teamId: string): Promise<void> {
    const { state } = await this.store.loadRecord<FantasyTeamState>(
      fantasyTeamDecider.aggregateType,
      teamId,
      fantasyTeamDecider.initialState,
    );
    if (state !== null && state.ownerUserId === ownerUserId) await this.confirm(ownerUserId, teamId);
    else await this.release(ownerUserId, teamId);
  }
}
