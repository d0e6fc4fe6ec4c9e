import path from 'node:path';

import type { Result } from 'ioredis';

import { defineScript, type ScriptDefinition } from '../../../shared/redis/scripts';

/** ListUsers' read of one page of an e-mail index (lua/users-page-1.lua). */
export const LIST_USERS_SCRIPTS: readonly ScriptDefinition[] = [
  defineScript({
    name: 'usersPage',
    file: path.join(__dirname, 'lua', 'users-page-1.lua'),
    numberOfKeys: 1,
  }),
];

declare module 'ioredis' {
  interface RedisCommander<Context> {
    /** `[count, members]` of the range [min, max] of `key`, the page from `skip`, at most `take`. */
    usersPage(
      key: string,
      min: string,
      max: string | Buffer,
      skip: number,
      take: number,
    ): Result<[number, string[]], Context>;
  }
}
