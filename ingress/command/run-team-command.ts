import { randomUUID } from 'node:crypto';

import { serviceUnavailable } from '../../shared/errors';
import { type CommandOutcome, refused } from '../../shared/event-store/command-answer';
import type { CommandIdempotency, CommandRequestKey } from '../../shared/event-store/command-idempotency';
import { AppendOutcomeUnknownError } from '../../shared/event-store/errors';
import type { CommandHandler } from '../../shared/event-store/handle-command';
import type { FantasyTeamCommandDefinition } from '../../shared/fantasy-team/fantasy-team.commands';
import { fantasyTeamDecider } from '../../shared/fantasy-team/fantasy-team.decider';
import { TEAM_MESSAGES } from '../../shared/fantasy-team/fantasy-team.messages';
import { hasAnyRole } from '../../shared/roles';
import { answerOnce, type CommandRequest, outcomeUnknownMessage, refusalOfStoreError } from './command-steps';
import type { OwnerTeamLimit } from './owner-team-limit';

/** Who sends the command: its id and roles, as authenticated. */
export interface CommandCaller {
  readonly userId: string;
  readonly roles: readonly string[];
}

/** One validated fantasy-team command, as POST /api/command received it. */
export type TeamCommandRequest = CommandRequest<FantasyTeamCommandDefinition>;

export interface TeamCommandServices {
  readonly commands: CommandHandler;
  readonly idempotency: CommandIdempotency;
  readonly teamLimit: OwnerTeamLimit;
}

/**
 * Runs one fantasy-team command for its caller: checks the role, answers a repeated requestId with
 * its first outcome (the same caller's only), bounds the owner's teams on a create, runs the command
 * on the team, and remembers the outcome. Every refusal is an outcome; the one error it throws on
 * purpose is the 503 problem of an append whose outcome is unknown (not remembered: the retry must
 * learn the outcome). Redis being away otherwise propagates as it does everywhere.
 */
export function runTeamCommand(
  services: TeamCommandServices,
  caller: CommandCaller,
  request: TeamCommandRequest,
): Promise<CommandOutcome> {
  const { definition, requestId } = request;
  const { commandType } = definition;

  // 1. Authorise: the role here, ownership in the decider.
  if (!hasAnyRole(caller.roles, definition.roles)) {
    return Promise.resolve(refused('COMMAND_FORBIDDEN', `${commandType} requires the role Member.`));
  }

  // 2. A repeated requestId answers what it answered first, to the same caller only.
  const aggregateId = String(request.fields.aggregateRootId);
  const key: CommandRequestKey | null = requestId
    ? { callerUserId: caller.userId, requestId, commandType, aggregateId }
    : null;
  return answerOnce(services.idempotency, key, () => runOnTeam(services, caller, request, aggregateId));
}

/** Steps 3 and 4 of runTeamCommand: the owner's team bound on a create, then the team itself. */
async function runOnTeam(
  services: TeamCommandServices,
  caller: CommandCaller,
  request: TeamCommandRequest,
  aggregateId: string,
): Promise<CommandOutcome> {
  const { definition, requestId } = request;
  const { commandType } = definition;
  // 3. A new team first takes one of its owner's slots (MAX_TEAMS_PER_OWNER; an Admin is not
  //    bounded, but its teams are indexed all the same: an erased owner's teams are found there,
  //    ADR 0014). Confirmed once the team is written, given back when nothing was.
  const { teamLimit } = services;
  const creates = commandType === 'CreateFantasyTeam';
  if (
    creates &&
    !(await teamLimit.reserve(caller.userId, aggregateId, { bounded: !hasAnyRole(caller.roles, ['Admin']) }))
  ) {
    return refused('COMMAND_VALIDATION_ERROR', TEAM_MESSAGES.ownerTeamLimit(teamLimit.maxPerOwner));
  }
  /** Whether the command wrote its events: a reservation is confirmed, released, or left to be
   *  settled later when that is not known. */
  let written: boolean | 'unknown' = 'unknown';

  // 4. Run it on the team.
  let outcome: CommandOutcome;
  try {
    const handled = await services.commands.handle(fantasyTeamDecider, {
      aggregateId,
      command: definition.toDomain(request.fields),
      expectedVersion: request.expectedVersion,
      context: { now: new Date(), actorUserId: caller.userId, actorRoles: caller.roles },
      // The correlation id is the service's own, never the client's: X-Request-Id is only a trace.
      metadata: {
        actorUserId: caller.userId,
        requestId,
        correlationId: randomUUID(),
        traceId: request.traceId,
      },
      // A retry whose first attempt appended but lost its answer gets that attempt's events back.
      ...(requestId ? { requestId } : {}),
    });
    written = handled.accepted;
    if (handled.accepted)
      outcome = { kind: 'succeeded', eventCount: handled.events.length, version: handled.version };
    else if (handled.kind === 'forbidden') outcome = refused('COMMAND_FORBIDDEN', handled.message);
    else outcome = refused('COMMAND_VALIDATION_ERROR', handled.message);
  } catch (error) {
    if (error instanceof AppendOutcomeUnknownError) {
      // Redis went away with the append sent, or no replica confirmed it: the same 503 problem as
      // any Redis outage, saying that this one may have taken effect.
      throw serviceUnavailable(outcomeUnknownMessage(requestId, 'team', error.reason));
    }
    const refusal = refusalOfStoreError(error, 'team');
    if (!refusal) throw error;
    written = false;
    outcome = refusal;
  } finally {
    if (creates) await settleReservation(teamLimit, caller.userId, aggregateId, written);
  }
  return outcome;
}

/**
 * Confirms a team slot whose create was written, releases one whose create wrote nothing, and
 * leaves one whose outcome is unknown to be settled against the team's record later. Failures are
 * left to that settling too: the outcome does not depend on them.
 */
async function settleReservation(
  limit: OwnerTeamLimit,
  ownerUserId: string,
  teamId: string,
  written: boolean | 'unknown',
): Promise<void> {
  if (written === 'unknown') return;
  const settle = written ? limit.confirm(ownerUserId, teamId) : limit.release(ownerUserId, teamId);
  await settle.catch(() => undefined);
}
