import path from 'node:path';

import type { Result } from 'ioredis';

import { defineScript, type ScriptDefinition } from '../redis/scripts';

/** The accounts' scripts (lua/): the last-enabled-Admin guard. */
export const ACCOUNT_SCRIPTS: readonly ScriptDefinition[] = [
  defineScript({
    name: 'releaseAdmin',
    file: path.join(__dirname, 'lua', 'release-admin-1.lua'),
    numberOfKeys: 1,
  }),
];

declare module 'ioredis' {
  interface RedisCommander<Context> {
    releaseAdmin(enabledAdminsKey: string, userId: string): Result<0 | 1, Context>;
  }
}
