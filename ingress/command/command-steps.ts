import { type CommandOutcome, refused } from '../../shared/event-store/command-answer';
import type { CommandIdempotency, CommandRequestKey } from '../../shared/event-store/command-idempotency';
import {
  AggregateBusyError,
  ExpectedVersionMismatchError,
  type OutcomeUnknownReason,
  StaleAppendError,
} from '../../shared/event-store/errors';
import { isRedisOutOfMemory, isRedisUnavailable } from '../../shared/redis/connections';

/**
 * One validated command of POST /api/command, whatever its family: its definition (the schema it
 * was validated by), its `command` object, the caller's optimistic-concurrency version (above 0,
 * the command runs only at the aggregate's version), its requestId (lower case; null when none was
 * sent, then nothing is remembered) and the HTTP request's X-Request-Id (a trace only, never the
 * correlation id).
 */
export interface CommandRequest<Definition> {
  readonly definition: Definition;
  readonly fields: Readonly<Record<string, unknown>>;
  readonly expectedVersion: number;
  readonly requestId: string | null;
  readonly traceId: string;
}

/**
 * Answers a command once per caller's requestId: a repeat gets the first outcome (the same
 * caller's only: a request id belongs to its caller, so another account's use of it is a request of
 * its own), a requestId used for another command is refused, and a new one runs `run` and keeps its
 * outcome. With no requestId, `run` just runs. Shared by every command family of POST /api/command.
 */
export async function answerOnce(
  idempotency: CommandIdempotency,
  key: CommandRequestKey | null,
  run: () => Promise<CommandOutcome>,
): Promise<CommandOutcome> {
  if (!key) return run();
  const recalled = await idempotency.recall(key);
  if (recalled.kind === 'replay') return recalled.outcome;
  if (recalled.kind === 'mismatch') {
    return refused('DUPLICATE_REQUEST_ID', `requestId ${key.requestId} was already used for another command`);
  }
  const outcome = await run();
  // Kept for the caller's retries; an outcome Redis could not keep still goes out (the aggregate's
  // own record of the request id answers a retry of an accepted command).
  try {
    return await idempotency.remember(key, outcome);
  } catch (error) {
    // Away or full (out of memory): the outcome is known, so it goes out all the same.
    if (isRedisUnavailable(error) || isRedisOutOfMemory(error)) return outcome;
    throw error;
  }
}

/** How the messages name the aggregate a command acts on. */
export type StoreNoun = 'team' | 'user' | 'webhook subscription';

/**
 * The event store's refusals that wrote nothing, as the endpoint's outcomes; else undefined.
 * `noun` names the aggregate in the messages ("the team", "the user").
 */
export function refusalOfStoreError(error: unknown, noun: StoreNoun): CommandOutcome | undefined {
  if (error instanceof ExpectedVersionMismatchError) {
    const { expectedVersion, actualVersion } = error;
    const message = `Expected version ${expectedVersion}, but the ${noun} is at version ${actualVersion}`;
    return refused('CONCURRENCY_CONFLICT', message);
  }
  if (error instanceof StaleAppendError) {
    // The caller named no version, and the fence refused a decision made on a version another
    // command moved on from after this one's lock expired. A retry is decided on the aggregate as it is.
    const message = `The ${noun} changed while this command was being handled; nothing was written. Retry shortly.`;
    return refused('AGGREGATE_BUSY', message);
  }
  if (error instanceof AggregateBusyError) {
    return refused('AGGREGATE_BUSY', `The ${noun} is busy with another command. Retry shortly.`);
  }
  return undefined;
}

/** Why the outcome is unknown, as the 503 problem says it first. */
const OUTCOME_UNKNOWN_LEADS: Readonly<Record<OutcomeUnknownReason, string>> = {
  unanswered: 'Redis became unreachable after the command was sent to it: the command may have taken effect.',
  unreplicated:
    'No Redis replica confirmed the command in time (WRITE_DURABILITY=replicated): the command may have taken effect.',
};

/**
 * The message of the 503 problem when the append's outcome is unknown (Redis went away after it was
 * sent, or no replica confirmed it): it may have taken effect; with a requestId a resend is safe and
 * learns which.
 */
export function outcomeUnknownMessage(
  requestId: string | null,
  noun: StoreNoun,
  reason: OutcomeUnknownReason = 'unanswered',
): string {
  const lead = OUTCOME_UNKNOWN_LEADS[reason];
  return requestId
    ? `${lead} Send it again with the same requestId ${requestId} to learn its outcome; it is applied at most once.`
    : `${lead} It carried no requestId, so sending it again could apply it twice: read the ${noun} first.`;
}
