import path from 'node:path';

import type { Result } from 'ioredis';

import { defineScript, type ScriptDefinition } from '../../shared/redis/scripts';

/** The owner-team bound's scripts (lua/): reserve a slot before a create, release it after. */
export const OWNER_TEAM_SCRIPTS: readonly ScriptDefinition[] = [
  defineScript({
    name: 'reserveOwnerTeam',
    file: path.join(__dirname, 'lua', 'reserve-owner-team-1.lua'),
    numberOfKeys: 1,
  }),
  defineScript({
    name: 'releaseOwnerTeam',
    file: path.join(__dirname, 'lua', 'release-owner-team-1.lua'),
    numberOfKeys: 1,
  }),
];

declare module 'ioredis' {
  interface RedisCommander<Context> {
    reserveOwnerTeam(
      ownerTeamsKey: string,
      teamId: string,
      maxTeams: number,
      nowMs: number,
      deadlineMs: number,
    ): Result<[0 | 1, ...string[]], Context>;
    releaseOwnerTeam(ownerTeamsKey: string, teamId: string): Result<number, Context>;
  }
}
