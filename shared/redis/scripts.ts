import { readFileSync } from 'node:fs';
import path from 'node:path';

import type { Cluster, Redis, Result } from 'ioredis';

/**
 * The registry of the service's Lua scripts. Each feature declares its own beside its Lua files
 * (`defineScript` in event-store/scripts.ts, projections/scripts.ts, ...) and calls
 * `registerScripts` on the connections it uses; this module knows no feature.
 *
 * A script is a file of its own named `<name>-<key count>.lua` (`-n.lua` when the caller passes the
 * count first), opening with an `Input: KEYS[..] ARGV[..] / Output:` block. Registered on a
 * connection with defineCommand, so ioredis sends EVALSHA and falls back to EVAL after a restart.
 * The command's typed signature is declared by the feature (`declare module 'ioredis'`), and its
 * negative replies become errors in one place (script-codes.ts).
 */
export interface ScriptDefinition {
  /** The command's name on the connection (`appendEvents`). */
  readonly name: string;
  /** The Lua file's absolute path; its name ends with `-<numberOfKeys>.lua`. */
  readonly file: string;
  /** How many of the arguments are keys; 'n' when the caller passes that count first. */
  readonly numberOfKeys: number | 'n';
}

const definitions = new Map<string, ScriptDefinition>();
const keyCountFirst: string[] = [];

/**
 * The scripts whose first argument is their key count, not a key. ioredis's cluster auto-pipelining
 * groups a command by its first argument, so it would file these under the slot of "5" and refuse
 * the batch; connections.ts hands this very array (kept up to date by defineScript) to the cluster
 * as its auto-pipelining exceptions, so a script defined after a connection opened is covered too.
 */
export const SCRIPTS_WITH_KEY_COUNT_FIRST: readonly string[] = keyCountFirst;

/**
 * Declares a script. The file name must carry the key count, so the count is readable from the
 * tree and cannot drift from the declaration; a second definition of a name must be the same one.
 */
export function defineScript(definition: ScriptDefinition): ScriptDefinition {
  const suffix = /-(\d+|n)\.lua$/.exec(definition.file)?.[1];
  if (suffix !== String(definition.numberOfKeys)) {
    throw new Error(
      `script file ${definition.file} does not carry its key count (${definition.numberOfKeys})`,
    );
  }
  const known = definitions.get(definition.name);
  if (known) {
    if (known.file !== definition.file || known.numberOfKeys !== definition.numberOfKeys)
      throw new Error(`script ${definition.name} is defined twice`);
    return known;
  }
  definitions.set(definition.name, definition);
  if (definition.numberOfKeys === 'n') keyCountFirst.push(definition.name);
  return definition;
}

const sources = new Map<string, string>();
function source(file: string): string {
  let text = sources.get(file);
  if (text === undefined) {
    text = readFileSync(file, 'utf8');
    sources.set(file, text);
  }
  return text;
}

/** Adds a feature's scripts to a connection as commands; safe to call more than once. */
export function registerScripts<Client extends Redis | Cluster>(
  redis: Client,
  scripts: readonly ScriptDefinition[],
): Client {
  for (const { name, file, numberOfKeys } of scripts) {
    if (typeof (redis as unknown as Record<string, unknown>)[name] === 'function') continue;
    redis.defineCommand(
      name,
      numberOfKeys === 'n' ? { lua: source(file) } : { numberOfKeys, lua: source(file) },
    );
  }
  return redis;
}

/** The ground floor's own scripts: a lock (or lease) released or renewed only by its holder. */
export const LOCK_SCRIPTS: readonly ScriptDefinition[] = [
  defineScript({
    name: 'releaseLock',
    file: path.join(__dirname, 'lua', 'release-lock-1.lua'),
    numberOfKeys: 1,
  }),
  defineScript({ name: 'renewLock', file: path.join(__dirname, 'lua', 'renew-lock-1.lua'), numberOfKeys: 1 }),
];

declare module 'ioredis' {
  interface RedisCommander<Context> {
    releaseLock(lockKey: string, token: string): Result<number, Context>;
    renewLock(lockKey: string, token: string, ttlMs: number): Result<number, Context>;
  }
}
