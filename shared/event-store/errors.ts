/** The stream moved on since it was read: another writer appended first. */
export class ConcurrencyConflictError extends Error {
  override readonly name = 'ConcurrencyConflictError';
  constructor(
    readonly aggregateId: string,
    readonly expectedVersion: number,
    readonly actualVersion: number,
  ) {
    super(`Expected version ${expectedVersion} of ${aggregateId}, but it is at version ${actualVersion}`);
  }
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

/** Codes the Lua scripts return instead of throwing; one mapper turns them into errors. */
export const SCRIPT_CODES = { VERSION_MISMATCH: -1 } as const;
