/**
 * Codes the Lua scripts answer instead of throwing: a negative reply. Every caller passes a reply
 * through `scriptReply`, the one place a code becomes a typed error.
 */
export const SCRIPT_CODES = {
  /** The script's fence refused the write (a version or checkpoint moved): nothing was written. */
  FENCED: -1,
} as const;

/** A script's fence refused its write: what the caller read is no longer current. */
export class ScriptFencedError extends Error {
  override readonly name = 'ScriptFencedError';
  constructor(readonly script: string) {
    super(`${script} was refused by its fence: nothing was written`);
  }
}

/** The reply when it is not a code; else the code's typed error, thrown. */
export function scriptReply(script: string, reply: number): number {
  if (reply >= 0) return reply;
  if (reply === SCRIPT_CODES.FENCED) throw new ScriptFencedError(script);
  throw new Error(`${script} answered an unknown code ${reply}`);
}
