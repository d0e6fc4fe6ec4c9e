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
    const stored = await this.redis.get(this.keys.commandResponse(request.callerUserId, request.requestId));
    if (stored === null) return { kind: 'new' };
    const parsed = JSON.parse(stored) as StoredAnswer;
    return parsed.fingerprint === CommandIdempotency.fingerprint(request)
      ? { kind: 'replay', outcome: outcomeOf(parsed.answer) }
      : { kind: 'mismatch' };
  }

  /** Stores the outcome unless one is stored already; returns the one that is kept. */
  async remember(request: CommandRequestKey, outcome: CommandOutcome): Promise<CommandOutcome> {
    // Kept as the 2.6 answer it was sent as, so an answer stored by an earlier release replays too;
    // never with a signing secret (a repeat is told it had one).
    const answer = commandAnswer(withoutSecret(outcome), request.requestId, request.commandType);
    if (![200, 400, 403].includes(answer.status)) return outcome;
    const key = this.keys.commandResponse(request.callerUserId, request.requestId);
    const stored: StoredAnswer = { fingerprint: CommandIdempotency.fingerprint(request), answer };
    if (mentionsAccount(answer.body.errorMessage ?? '', request.callerUserId)) {
      // Indexed first: a crash in between leaves an index entry naming nothing, never an answer
      // that erasing its caller would miss.
      const index = this.keys.commandAnswersNamingCaller(request.callerUserId);
      await Promise.all([
        this.redis.sadd(index, request.requestId.toLowerCase()),
        this.redis.expire(index, REPLAY_WINDOW_SECONDS),
      ]);
    }
    const set = await this.redis.set(key, JSON.stringify(stored), 'EX', REPLAY_WINDOW_SECONDS, 'NX');
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
    const requestIds = await this.redis.smembers(index);
    // One key each: on a cluster they lie in different slots.
    const deleted = await Promise.all(
      requestIds.map((requestId) => this.redis.unlink(this.keys.commandResponse(callerUserId, requestId))),
    );
    await this.redis.unlink(index);
    return deleted.reduce((sum, count) => sum + count, 0);
  }
}
