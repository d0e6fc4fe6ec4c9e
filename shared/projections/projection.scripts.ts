import path from 'node:path';

import type { Result } from 'ioredis';

import { defineScript, LOCK_SCRIPTS, type ScriptDefinition } from '../redis/scripts';

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
 * What readProjectionBatch answers: the log entries, the stream entry of the event each names
 * (null when not read), and the documents touched as key, JSON (null when absent), key, JSON...
 */
export type ProjectionBatchRead = [
  entries: [id: string, fields: string[]][],
  events: ([id: string, fields: string[]] | null)[],
  documents: (string | null)[],
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
    ): Result<ProjectionBatchRead, Context>;
  }
}
