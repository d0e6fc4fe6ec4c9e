import path from 'node:path';

import type { Result } from 'ioredis';

import { defineScript, LOCK_SCRIPTS, type ScriptDefinition } from '../redis/scripts';

/** The imports' scripts (lua/), with the lock scripts that release the inline claim. */
export const IMPORT_SCRIPTS: readonly ScriptDefinition[] = [
  ...LOCK_SCRIPTS,
  defineScript({
    name: 'claimInlineImport',
    file: path.join(__dirname, 'lua', 'claim-inline-import-6.lua'),
    numberOfKeys: 6,
  }),
  defineScript({
    name: 'reservePendingImport',
    file: path.join(__dirname, 'lua', 'reserve-pending-import-1.lua'),
    numberOfKeys: 1,
  }),
  defineScript({
    name: 'replaceImportRecord',
    file: path.join(__dirname, 'lua', 'replace-import-record-1.lua'),
    numberOfKeys: 1,
  }),
];

declare module 'ioredis' {
  interface RedisCommander<Context> {
    claimInlineImport(...keysThenArgs: (string | number)[]): Result<number, Context>;
    reservePendingImport(
      pendingKey: string,
      importJobId: string,
      limit: number,
      ttlSeconds: number,
    ): Result<number, Context>;
    replaceImportRecord(recordKey: string, asRead: string, replacement: string): Result<0 | 1, Context>;
  }
}
