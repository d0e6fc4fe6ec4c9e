import type { WriteDurabilityMode } from '../config';
import { masterHolding, type RedisClient } from '../redis/connections';
import type { Keys } from '../redis/keys';
import { AppendOutcomeUnknownError } from './errors';

/**
 * What a command's success promises about its events (WRITE_DURABILITY, ADR 0021): the command
 * handler calls `confirm` after an append, and before answering a retry with the events an earlier
 * attempt appended, and answers success only once it resolves.
 */
export interface WriteDurability {
  confirm(aggregateType: string, aggregateId: string): Promise<void>;
}

/** `local`: the aggregate's master has the events; a failover may lose what its replica lacked. */
export const LOCAL_DURABILITY: WriteDurability = { confirm: () => Promise.resolve() };

/**
 * `replicated`: a replica of the aggregate's master has the events. `WAIT 1 <timeoutMs>` on the
 * connection the append went over (WAIT counts that connection's own writes, up to its last) asks
 * the master whether a replica acknowledged them. No replica in time, or no answer, is an append
 * whose outcome is unknown: the 503 that names the requestId to retry with. The retry finds the
 * events by that id (they may have taken effect) and is confirmed the same way, or, if a failover
 * lost them, decides and appends the command again.
 */
export class ReplicaConfirmation implements WriteDurability {
  constructor(
    private readonly redis: RedisClient,
    private readonly keys: Keys,
    private readonly timeoutMs: number,
  ) {}

  async confirm(aggregateType: string, aggregateId: string): Promise<void> {
    let replicas: number;
    try {
      const master = masterHolding(this.redis, this.keys.aggregateStream(aggregateType, aggregateId));
      replicas = await master.wait(1, this.timeoutMs);
    } catch (error) {
      throw new AppendOutcomeUnknownError(aggregateId, error);
    }
    if (replicas < 1) {
      const cause = new Error(`WAIT 1 ${this.timeoutMs}: no replica acknowledged the append`);
      throw new AppendOutcomeUnknownError(aggregateId, cause, 'unreplicated');
    }
  }
}

/** The durability the settings ask for, on the connection commands are handled with. */
export function writeDurability(
  settings: { readonly mode: WriteDurabilityMode; readonly timeoutMs: number },
  redis: RedisClient,
  keys: Keys,
): WriteDurability {
  return settings.mode === 'replicated'
    ? new ReplicaConfirmation(redis, keys, settings.timeoutMs)
    : LOCAL_DURABILITY;
}
