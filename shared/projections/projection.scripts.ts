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
];

declare module 'ioredis' {
  interface RedisCommander<Context> {
    /** Variable key count: the first argument is the number of keys. */
    applyProjectionBatch(numberOfKeys: number, ...keysThenArgs: string[]): Result<number, Context>;
  }
}
