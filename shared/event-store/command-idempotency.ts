import type { RedisClient } from '../redis/connections';
import type { Keys } from '../redis/keys';
import { mentionsAccount } from '../roles';
import {
  type CommandAnswer,
  commandAnswer,
  type CommandOutcome,
  outcomeOf,
  withoutSecret,
} from './command-answer';
import { REQUEST_ID_WINDOW_MS } from './event-store';

const REPLAY_WINDOW_SECONDS = REQUEST_ID_WINDOW_MS / 1000;

interface StoredAnswer {
  /** What the request id was first used for: commandType and aggregate. */
  readonly fingerprint: string;
  /** The 2.6 answer as it was sent. */
  readonly answer: CommandAnswer;
}

/** One caller's use of a request id for one command on one aggregate. */
export interface CommandRequestKey {
  readonly callerUserId: string;
  readonly requestId: string;
  readonly commandType: string;
  readonly aggregateId: string;
}

export type Recall =
  | { readonly kind: 'new' }
  | { readonly kind: 'replay'; readonly outcome: CommandOutcome }
  | { readonly kind: 'mismatch' };

/**
 * Remembers the first final outcome (success, rule failure, forbidden) of each caller's command
 * requestId for 24 h; a 409 or 503 invites a retry, which must really run. An outcome lost before
 * it was stored needs nothing here: the aggregate keeps the request id with its events. Kept per
 * (caller, request id), so another account's same id is a request of its own that never sees or
 * spoils the first caller's. An answer naming its caller by e-mail is indexed per caller too, so
 * erasing the caller deletes it (`forgetCaller`, ADR 0014).
 *
 * The answer lies in the aggregate's partition and the request id's use in the caller's, so a
 * command waits on no master but those two (ADR 0030). A new request reads only its use.
 */
export class CommandIdempotency {
  constructor(
    private readonly redis: RedisClient,
    private readonly keys: Keys,
  ) {}

  private static fingerprint({ commandType, aggregateId }: CommandRequestKey): string {
    return `${commandType}:${aggregateId.toLowerCase()}`;
  }

  async recall(request: CommandRequestKey): Promise<Recall> {
    const use = await this.redis.get(this.keys.commandRequestUse(request.callerUserId, request.requestId));
    if (use === null) return { kind: 'new' };
    if (use !== CommandIdempotency.fingerprint(request)) return { kind: 'mismatch' };
    const stored = await this.redis.get(this.answerKey(request));
    // Used, and its answer not kept (lost with a failover): the retry runs, and the aggregate's own
    // record of the request id answers it if it had appended.
    if (stored === null) return { kind: 'new' };
    return { kind: 'replay', outcome: outcomeOf((JSON.parse(stored) as StoredAnswer).answer) };
  }

  /** Stores the outcome unless one is stored already; returns the one that is kept. */
  async remember(request: CommandRequestKey, outcome: CommandOutcome): Promise<CommandOutcome> {
    // Kept as the 2.6 answer it was sent as, so an answer stored by an earlier release replays too;
    // never with a signing secret (a repeat is told it had one).
    const answer = commandAnswer(withoutSecret(outcome), request.requestId, request.commandType);
    if (![200, 400, 403].includes(answer.status)) return outcome;
    const fingerprint = CommandIdempotency.fingerprint(request);
    const stored: StoredAnswer = { fingerprint, answer };
    if (mentionsAccount(answer.body.errorMessage ?? '', request.callerUserId)) {
      // Indexed first: a crash in between leaves an index entry naming nothing, never an answer
      // that erasing its caller would miss.
      const index = this.keys.commandAnswersNamingCaller(request.callerUserId);
      await Promise.all([
        this.redis.hset(index, request.requestId.toLowerCase(), request.aggregateId.toLowerCase()),
        this.redis.expire(index, REPLAY_WINDOW_SECONDS),
      ]);
    }
    // The use and the answer are on two masters, written together: a use without its answer makes
    // a retry run again (see recall), never replay another command's answer.
    const [, set] = await Promise.all([
      this.redis.set(
        this.keys.commandRequestUse(request.callerUserId, request.requestId),
        fingerprint,
        'EX',
        REPLAY_WINDOW_SECONDS,
        'NX',
      ),
      this.redis.set(this.answerKey(request), JSON.stringify(stored), 'EX', REPLAY_WINDOW_SECONDS, 'NX'),
    ]);
    if (set === 'OK') return outcome;
    // A concurrent duplicate answered first: both callers get the first outcome.
    const first = await this.recall(request);
    return first.kind === 'replay' ? first.outcome : outcome;
  }

  /**
   * Deletes the remembered answers that name `callerUserId` by e-mail (the account is erased: it
   * cannot send a retry any more), and their index. Idempotent; returns how many it deleted.
   */
  async forgetCaller(callerUserId: string): Promise<number> {
    const index = this.keys.commandAnswersNamingCaller(callerUserId);
    const legacyIndex = this.keys.legacyCommandAnswers.namingCaller(callerUserId);
    const [named, legacyRequestIds] = await Promise.all([
      this.redis.hgetall(index),
      this.redis.smembers(legacyIndex),
    ]);
    // One key each: on a cluster they lie in different slots.
    const deleted = await Promise.all([
      ...Object.entries(named).map(([requestId, aggregateId]) =>
        this.redis.unlink(this.keys.commandResponse(callerUserId, requestId, aggregateId)),
      ),
      ...legacyRequestIds.map((requestId) =>
        this.redis.unlink(this.keys.legacyCommandAnswers.response(callerUserId, requestId)),
      ),
    ]);
    await Promise.all([this.redis.unlink(index), this.redis.unlink(legacyIndex)]);
    return deleted.reduce((sum, count) => sum + count, 0);
  }

  private answerKey(request: CommandRequestKey): string {
    return this.keys.commandResponse(request.callerUserId, request.requestId, request.aggregateId);
  }
}
