import { randomUUID } from 'node:crypto';

import { fantasyTeamDecider } from '../domain/fantasy-team/fantasy-team.decider';
import { TEAM_MESSAGES } from '../domain/fantasy-team/fantasy-team.messages';
import { serviceUnavailable } from '../errors';
import {
  AggregateBusyError,
  AppendOutcomeUnknownError,
  ExpectedVersionMismatchError,
  StaleAppendError,
} from '../event-store/errors';
import type { CommandHandler } from '../event-store/handle-command';
import { isRedisOutOfMemory, isRedisUnavailable } from '../redis/connections';
import { hasAnyRole, type Role } from '../roles';
import { type CommandOutcome, refused } from './command-answer';
import type { CommandIdempotency, CommandRequestKey } from './command-idempotency';
import type { FantasyTeamCommandDefinition } from './fantasy-team-command-definitions';
import type { OwnerTeamLimit } from './owner-team-limit';

/** The roles that may send commands at all; ownership is the decider's check. */
export const COMMAND_ROLES: readonly Role[] = ['Member'];

/** Who sends the command: its id and roles, as authenticated. */
export interface CommandCaller {
  readonly userId: string;
  readonly roles: readonly string[];
}

/** One validated fantasy-team command, as POST /api/command received it. */
export interface TeamCommandRequest {
  readonly definition: FantasyTeamCommandDefinition;
  /** The `command` object, validated by the definition's schema. */
  readonly fields: Readonly<Record<string, unknown>>;
  /** Optimistic concurrency: above 0, the command runs only at the team's version. */
  readonly expectedVersion: number;
  /** Lower case; null when the caller sent none (then nothing is remembered). */
  readonly requestId: string | null;
  /** The HTTP request's X-Request-Id: a trace only, never the correlation id. */
  readonly traceId: string;
}

export interface TeamCommandServices {
  readonly commands: CommandHandler;
  readonly idempotency: CommandIdempotency;
  readonly teamLimit: OwnerTeamLimit;
}

/**
 * The message of the 503 problem when the append's outcome is unknown (Redis went away after it was
 * sent): it may have taken effect; with a requestId a resend is safe and learns which.
 */
export function outcomeUnknownMessage(requestId: string | null): string {
  const lead =
    'Redis became unreachable after the command was sent to it: the command may have taken effect.';
  return requestId
    ? `${lead} Send it again with the same requestId ${requestId} to learn its outcome; it is applied at most once.`
    : `${lead} It carried no requestId, so sending it again could apply it twice: read the team first.`;
}

/**
 * Runs one fantasy-team command for its caller: checks the role, answers a repeated requestId with
 * its first outcome (the same caller's only), bounds the owner's teams on a create, runs the command
 * on the team, and remembers the outcome. Every refusal is an outcome; the one error it throws on
 * purpose is the 503 problem of an append whose outcome is unknown (not remembered: the retry must
 * learn the outcome). Redis being away otherwise propagates as it does everywhere.
 */
export async function runTeamCommand(
  services: TeamCommandServices,
  caller: CommandCaller,
  request: TeamCommandRequest,
): Promise<CommandOutcome> {
  const { definition, requestId } = request;
  const { commandType } = definition;

  // 1. Authorise: the role here, ownership in the decider.
  if (!hasAnyRole(caller.roles, COMMAND_ROLES)) {
    return refused('COMMAND_FORBIDDEN', `${commandType} requires the role Member.`);
  }

  // 2. A repeated requestId answers what it answered first, to the same caller only: a request id
  //    belongs to its caller, so another account's use of it is a request of its own.
  const aggregateId = String(request.fields.aggregateRootId);
  const key: CommandRequestKey | null = requestId
    ? { callerUserId: caller.userId, requestId, commandType, aggregateId }
    : null;
  if (key) {
    const recalled = await services.idempotency.recall(key);
    if (recalled.kind === 'replay') return recalled.outcome;
    if (recalled.kind === 'mismatch') {
      return refused(
        'DUPLICATE_REQUEST_ID',
        `requestId ${key.requestId} was already used for another command`,
      );
    }
  }
  /** Kept for the caller's retries; an outcome Redis could not keep still goes out (the aggregate's
   *  own record of the request id answers a retry of an accepted command). */
  const remembered = async (outcome: CommandOutcome): Promise<CommandOutcome> => {
    if (!key) return outcome;
    try {
      return await services.idempotency.remember(key, outcome);
    } catch (error) {
      // Away or full (out of memory): the outcome is known, so it goes out all the same.
      if (isRedisUnavailable(error) || isRedisOutOfMemory(error)) return outcome;
      throw error;
    }
  };

  // 3. A new team first takes one of its owner's slots (MAX_TEAMS_PER_OWNER; an Admin is not
  //    bounded). Confirmed once the team is written, given back when nothing was.
  const { teamLimit } = services;
  const bounded = commandType === 'CreateFantasyTeam' && !hasAnyRole(caller.roles, ['Admin']);
  if (bounded && !(await teamLimit.reserve(caller.userId, aggregateId))) {
    return remembered(
      refused('COMMAND_VALIDATION_ERROR', TEAM_MESSAGES.ownerTeamLimit(teamLimit.maxPerOwner)),
    );
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
    if (handled.accepted) outcome = { kind: 'succeeded', eventCount: handled.events.length };
    else if (handled.kind === 'forbidden') outcome = refused('COMMAND_FORBIDDEN', handled.message);
    else outcome = refused('COMMAND_VALIDATION_ERROR', handled.message);
  } catch (error) {
    if (error instanceof AppendOutcomeUnknownError) {
      // Redis went away with the append sent: the same 503 problem as any Redis outage, saying that
      // this one may have taken effect.
      throw serviceUnavailable(outcomeUnknownMessage(requestId));
    }
    const refusal = refusalOf(error);
    if (!refusal) throw error;
    written = false;
    outcome = refusal;
  } finally {
    if (bounded) await settleReservation(teamLimit, caller.userId, aggregateId, written);
  }
  return remembered(outcome);
}

/** The event store's refusals that wrote nothing, as the endpoint's outcomes; else undefined. */
function refusalOf(error: unknown): CommandOutcome | undefined {
  if (error instanceof ExpectedVersionMismatchError) {
    const { expectedVersion, actualVersion } = error;
    const message = `Expected version ${expectedVersion}, but the team is at version ${actualVersion}`;
    return refused('CONCURRENCY_CONFLICT', message);
  }
  if (error instanceof StaleAppendError) {
    // The caller named no version, and the fence refused a decision made on a version another
    // command moved on from after this one's lock expired. A retry is decided on the team as it is.
    const message =
      'The team changed while this command was being handled; nothing was written. Retry shortly.';
    return refused('AGGREGATE_BUSY', message);
  }
  if (error instanceof AggregateBusyError) {
    return refused('AGGREGATE_BUSY', 'The team is busy with another command. Retry shortly.');
  }
  return undefined;
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
