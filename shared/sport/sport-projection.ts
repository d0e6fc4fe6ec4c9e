import type { Projection } from '../projections/projection';
import type { Keys } from '../redis/keys';

/**
 * What every sport projection shares: its name, and its checkpoints under the one `{sport}` tag
 * (one per log partition), so a batch updates documents, indexes and checkpoint in one slot.
 */
export function sportProjectionBase(name: string): Pick<Projection<unknown>, 'name' | 'checkpointKey'> {
  return {
    name,
    checkpointKey: (keys: Keys, partition: number) => keys.sport.checkpoint(name, partition),
  };
}
