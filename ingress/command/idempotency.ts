import type { RedisClient } from '../../shared/redis/connections';

import { REQUEST_ID_WINDOW_MS } from '../../shared/event-store/event-store';
import type { Keys } from '../../shared/redis/keys';
import type { CommandAnswer } from './command-response';

const REPLAY_WINDOW_SECONDS = REQUEST_ID_WINDOW_MS / 1000;

interface StoredAnswer {
  /** What the request id was first used for: commandType and aggregate. */
  readonly fingerprint: string;
  readonly answer: CommandAnswer;
}

export type Recall =
  | { readonly kind: 'new' }
  | { readonly kind: 'replay'; readonly answer: CommandAnswer }
  | { readonly kind: 'mismatch' };

/**
 * Remembers the first answer to each command requestId for 24 h. Only final answers are kept
 * (success, rule failure, forbidden); a 409 or 503 invites a retry, which must really run. An
 * answer lost before it was remembered (Redis or the process died after the append) is not needed
 * for that: the aggregate keeps the request id with its events, and the retry gets them back.
 */
export class CommandIdempotency {
  constructor(
    private readonly redis: RedisClient,
    private readonly keys: Keys,
  ) {}

  static fingerprint(commandType: string, aggregateId: string): string {
    return `${commandType}:${aggregateId.toLowerCase()}`;
  }

  async recall(requestId: string, fingerprint: string): Promise<Recall> {
    const stored = await this.redis.get(this.keys.commandResponse(requestId));
    if (stored === null) return { kind: 'new' };
    const parsed = JSON.parse(stored) as StoredAnswer;
    return parsed.fingerprint === fingerprint
      ? { kind: 'replay', answer: parsed.answer }
      : { kind: 'mismatch' };
  }

  /** Stores the answer unless one is stored already; returns the one that is kept. */
  async remember(requestId: string, fingerprint: string, answer: CommandAnswer): Promise<CommandAnswer> {
    if (![200, 400, 403].includes(answer.status)) return answer;
    const key = this.keys.commandResponse(requestId);
    const stored: StoredAnswer = { fingerprint, answer };
    const set = await this.redis.set(key, JSON.stringify(stored), 'EX', REPLAY_WINDOW_SECONDS, 'NX');
    if (set === 'OK') return answer;
    // A concurrent duplicate answered first: both callers get the first answer.
    const first = await this.recall(requestId, fingerprint);
    return first.kind === 'replay' ? first.answer : answer;
  }
}
