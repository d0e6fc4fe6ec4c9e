import { SYSTEM_ACTOR } from '../accounts/account';
import type { EventMetadata } from '../event-store/envelope';
import type { CommandHandler } from '../event-store/handle-command';
import type { RedisClient } from '../redis/connections';
import type { Keys } from '../redis/keys';
import { fantasyTeamDecider } from './fantasy-team.decider';

/** Teams passed at once: each is its own aggregate, locked and appended on its own. */
const PASSES_IN_FLIGHT = 8;

/**
 * Passes an erased account's teams to its tombstone id (ADR 0014): each team the owner index
 * (owner-team-limit.ts) holds for the account gets the service's own EraseFantasyTeamOwner, which no
 * client can send, and the fantasy-team projection follows the new owner like any team event.
 */
export class TeamTombstone {
  constructor(
    private readonly redis: RedisClient,
    private readonly keys: Keys,
    private readonly commands: CommandHandler,
    private readonly clock: () => Date = () => new Date(),
  ) {}

  /**
   * Passes every team the index holds for `fromUserId` to `tombstoneId`, then takes them out of the
   * index, so an account registered later under the same id (the same e-mail) starts with none.
   * Returns how many teams it passed now. Idempotent: a team passed already, or a reservation that
   * never became a team, is refused by the decider and only leaves the index; run again after a
   * crash (or a failure, which it throws after trying every team), it passes what is left. Only a
   * reservation still within its deadline stays indexed: its create may yet land, and the next run
   * (the account's e-mail registered again) passes that team.
   */
  async passTeams(fromUserId: string, tombstoneId: string, metadata: EventMetadata): Promise<number> {
    const indexKey = this.keys.ownerTeams(fromUserId);
    const indexed = await this.redis.zrange(indexKey, 0, -1, 'WITHSCORES');
    const teams: { teamId: string; reservedUntil: number }[] = [];
    for (let i = 0; i + 1 < indexed.length; i += 2) {
      // A created team's score is +inf ('inf'); a reservation's, its deadline in unix ms.
      const score = indexed[i + 1];
      teams.push({ teamId: indexed[i] as string, reservedUntil: score === 'inf' ? Infinity : Number(score) });
    }
    let passed = 0;
    const failures: unknown[] = [];
    const done: string[] = [];
    const passOne = async ({ teamId, reservedUntil }: (typeof teams)[number]) => {
      try {
        const outcome = await this.commands.handle(fantasyTeamDecider, {
          aggregateId: teamId,
          command: { type: 'EraseFantasyTeamOwner', data: { fromUserId, tombstoneId } },
          // The service acts: whoever triggered the erasure is in the metadata, not the decision.
          context: { now: this.clock(), actorUserId: SYSTEM_ACTOR.userId, actorRoles: SYSTEM_ACTOR.roles },
          metadata,
        });
        if (outcome.accepted) passed += 1;
        // Refused: no such team (yet) or not the account's any more. A reservation still within its
        // deadline may be a create in flight: it stays for the next run.
        const inFlight = !outcome.accepted && Number.isFinite(reservedUntil) && reservedUntil > Date.now();
        if (!inFlight) done.push(teamId);
      } catch (error) {
        failures.push(error);
      }
    };
    for (let next = 0; next < teams.length; next += PASSES_IN_FLIGHT) {
      await Promise.all(teams.slice(next, next + PASSES_IN_FLIGHT).map(passOne));
    }
    if (done.length > 0) await this.redis.zrem(indexKey, ...done);
    if (failures.length > 0) throw failures[0];
    return passed;
  }
}
