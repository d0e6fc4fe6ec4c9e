import { readFileSync } from 'node:fs';
import path from 'node:path';
import type { Result } from 'ioredis';

import type { RedisClient } from './connections';

/**
 * Lua scripts, each in its own file named `<name>-<key count>.lua`. Registered on a connection with
 * defineCommand, so ioredis sends EVALSHA and falls back to EVAL after a Redis restart.
 */
const SCRIPT_FILES = {
  appendEvents: path.join(__dirname, '..', 'event-store', 'lua', 'append-events-6.lua'),
  lockAndLoad: path.join(__dirname, '..', 'event-store', 'lua', 'lock-and-load-3.lua'),
  releaseLock: path.join(__dirname, 'lua', 'release-lock-1.lua'),
  renewLock: path.join(__dirname, 'lua', 'renew-lock-1.lua'),
  applyProjectionBatch: path.join(__dirname, '..', 'projections', 'lua', 'apply-projection-batch-n.lua'),
  claimInlineImport: path.join(__dirname, '..', 'importers', 'lua', 'claim-inline-import-6.lua'),
} as const;

declare module 'ioredis' {
  interface RedisCommander<Context> {
    appendEvents(...keysThenArgs: (string | number)[]): Result<number, Context>;
    releaseLock(lockKey: string, token: string): Result<number, Context>;
    lockAndLoad(
      lockKey: string,
      recordKey: string,
      requestsKey: string,
      token: string,
      ttlMs: number,
      requestId: string,
    ): Result<[0] | [1, string | null, string | null, string | null], Context>;
    renewLock(lockKey: string, token: string, ttlMs: number): Result<number, Context>;
    claimInlineImport(...keysThenArgs: (string | number)[]): Result<number, Context>;
    /** Variable key count: the first argument is the number of keys. */
    applyProjectionBatch(numberOfKeys: number, ...keysThenArgs: string[]): Result<number, Context>;
  }
}

/** `-3.lua`: three keys; `-n.lua`: as many as the caller passes first. */
function keyCount(file: string): number | undefined {
  const match = /-(\d+|n)\.lua$/.exec(file);
  if (!match?.[1]) throw new Error(`script file ${file} does not carry its key count`);
  return match[1] === 'n' ? undefined : Number(match[1]);
}

/**
 * Scripts whose first argument is their key count, not a key. ioredis's cluster auto-pipelining
 * groups a command by its first argument, so it would file these under the slot of "5" and refuse
 * the batch; they are sent on their own instead (connections.ts).
 */
export const SCRIPTS_WITH_KEY_COUNT_FIRST: readonly string[] = Object.entries(SCRIPT_FILES)
  .filter(([, file]) => keyCount(file) === undefined)
  .map(([name]) => name);

const sources = new Map<string, string>();
function source(file: string): string {
  let text = sources.get(file);
  if (text === undefined) {
    text = readFileSync(file, 'utf8');
    sources.set(file, text);
  }
  return text;
}

/** Adds the service's scripts to a connection as commands; safe to call more than once. */
export function registerScripts<Client extends RedisClient>(redis: Client): Client {
  for (const [name, file] of Object.entries(SCRIPT_FILES)) {
    if (typeof (redis as unknown as Record<string, unknown>)[name] === 'function') continue;
    const numberOfKeys = keyCount(file);
    redis.defineCommand(
      name,
      numberOfKeys === undefined ? { lua: source(file) } : { numberOfKeys, lua: source(file) },
    );
  }
  return redis;
}
