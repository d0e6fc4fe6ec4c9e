import path from 'node:path';

import type { Result } from 'ioredis';

import { defineScript, LOCK_SCRIPTS, type ScriptDefinition } from '../../shared/redis/scripts';

/** The projections' batch script (lua/), with the lock scripts their partition leases use. */
export const PROJECTION_SCRIPTS: readonly ScriptDefinition[] = [
  ...LOCK_SCRIPTS,
  defineScript({
    name: 'applyProjectionBatch',
    file: path.join(__dirname, 'lua', 'apply-projection-batch-n.lua'),
    numberOfKeys: 'n',
  }),
  defineScript({
    name: 'readProjectionBatch',
    file: path.join(__dirname, 'lua', 'read-projection-batch-1.lua'),
    numberOfKeys: 1,
  }),
];

/**
 * What readProjectionBatch answers (see its file): the batch's length and last entry id; for each
 * entry of the type read, its position (from 1), aggregate id, version and stored event, flat; the
 * documents touched (JSON or null, in the order first touched); and the entries that are not
 * references (position, entry), flat.
 */
export type ProjectionBatchRead = [
  count: number,
  lastId: string | null,
  named: (number | string | null)[],
  documents: (string | null)[],
  unusual: (number | [id: string, fields: string[]])[],
];

declare module 'ioredis' {
  interface RedisCommander<Context> {
    /** Variable key count: the first argument is the number of keys. */
    applyProjectionBatch(numberOfKeys: number, ...keysThenArgs: string[]): Result<number, Context>;
    readProjectionBatch(
      logPartitionKey: string,
      start: string,
      count: number,
      aggregateType: string,
      streamsIn: string,
      documentsIn: string,
      /** How many entries at most, other types' included (count when absent). */
      entriesLimit?: number,
    ): Result<ProjectionBatchRead, Context>;
  }
}
