import path from 'node:path';

import type { Result } from 'ioredis';

import { defineScript, type ScriptDefinition } from '../../../shared/redis/scripts';

/** ListUsers' reads of one partition's e-mail index (lua/users-range-1.lua, lua/users-ranks-1.lua). */
export const LIST_USERS_SCRIPTS: readonly ScriptDefinition[] = [
  defineScript({
    name: 'usersRange',
    file: path.join(__dirname, 'lua', 'users-range-1.lua'),
    numberOfKeys: 1,
  }),
  defineScript({
    name: 'usersRanks',
    file: path.join(__dirname, 'lua', 'users-ranks-1.lua'),
    numberOfKeys: 1,
  }),
];

declare module 'ioredis' {
  interface RedisCommander<Context> {
    /**
     * `[matches, inPage, first, head]`: how many members of `key` lie in [min, max] and in
     * [pageMin, max], the latter's first rank, and its first `head` members.
     */
    usersRange(
      key: string,
      min: string,
      max: string | Buffer,
      pageMin: string,
      head: number,
    ): Result<[number, number, number, string[]], Context>;
    /** For each candidate, how many members of `key` lie in [pageMin, candidate). */
    usersRanks(key: string, pageMin: string, ...candidates: string[]): Result<number[], Context>;
  }
}
