/**
 * The stream was not at the version a writer counted on. Never thrown itself: one of its two
 * kinds below is, and they mean different things to a caller.
 */
export abstract class ConcurrencyConflictError extends Error {
  constructor(
    readonly aggregateId: string,
    readonly expectedVersion: number,
    readonly actualVersion: number,
  ) {
    super(`Expected version ${expectedVersion} of ${aggregateId}, but it is at version ${actualVersion}`);
  }
}

/**
 * The caller's own expectedVersion (optimistic concurrency) is not the aggregate's version: found
 * under the lock before deciding, or by the append's fence after it (the aggregate left that version
 * meanwhile); either way nothing was written.
 */
export class ExpectedVersionMismatchError extends ConcurrencyConflictError {
  override readonly name = 'ExpectedVersionMismatchError';
}

/**
 * The append's fence refused a decision made on a version another writer has since moved on from
 * (this writer's lock expired in between, or it appended without one): nothing was written, and a
 * retry is decided on the aggregate as it is then. The command handler reports it as an
 * ExpectedVersionMismatchError instead when its caller had named a version.
 */
export class StaleAppendError extends ConcurrencyConflictError {
  override readonly name = 'StaleAppendError';
}

/** The aggregate's lock was not obtained within the wait bound: someone else is working on it. */
export class AggregateBusyError extends Error {
  override readonly name = 'AggregateBusyError';
  constructor(
    readonly aggregateId: string,
    readonly waitedMs: number,
  ) {
    super(`Aggregate ${aggregateId} is busy; lock not obtained within ${waitedMs} ms`);
  }
}

/**
 * Why an append's outcome is unknown: its answer never came (`unanswered`), or it was written on
 * the aggregate's master but no replica confirmed it in time under WRITE_DURABILITY=replicated
 * (`unreplicated`: a failover now could still lose it).
 */
export type OutcomeUnknownReason = 'unanswered' | 'unreplicated';

/**
 * The append's script was sent, but its answer never came (the connection failed or timed out on
 * the way back): the events may or may not be stored. Never retried on the same connection (the
 * request connection does not re-send an unanswered command), since a re-sent append would meet its
 * own events and be refused by the fence as if nothing had been written. The caller's retry with the
 * same request id learns the outcome: the aggregate recorded the id with the events if they were
 * written. Also thrown, as `unreplicated`, when the events were written but no replica confirmed
 * them (write-durability.ts): the same retry is safe, and answers once a replica has them.
 */
export class AppendOutcomeUnknownError extends Error {
  override readonly name = 'AppendOutcomeUnknownError';
  constructor(
    readonly aggregateId: string,
    override readonly cause: unknown,
    readonly reason: OutcomeUnknownReason = 'unanswered',
  ) {
    super(
      `The append to ${aggregateId} was sent but its outcome is unknown (${reason}): ${cause instanceof Error ? cause.message : String(cause)}`,
    );
  }
}
