import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import path from 'node:path';

import type { Cluster, Redis, Result } from 'ioredis';

/**
 * The registry of the service's Lua scripts; it knows no feature. Each feature declares its own
 * beside its Lua files (`defineScript`), with their typed signatures (`declare module 'ioredis'`),
 * and registers them on the connections it uses. A script is a file `<name>-<key count>.lua`
 * (`-n.lua` when the caller passes the count), opening with an `Input: KEYS[..] ARGV[..] / Output:`
 * block, sent as EVALSHA (EVAL after a restart); negative replies become errors in script-codes.ts.
 */
export interface ScriptDefinition {
  /** The command's name on the connection (`appendEvents`). */
  readonly name: string;
  /** The Lua file's absolute path; its name ends with `-<numberOfKeys>.lua`. */
  readonly file: string;
  /** How many of the arguments are keys; 'n' when the caller passes that count first. */
  readonly numberOfKeys: number | 'n';
  /**
   * Set when this definition declares fewer keys than its file takes: the file reads its last keys
   * only for an optional part of its work (nil when left out), so a caller without that part
   * registers it again with fewer and leaves them out. Each declared key costs Redis CPU even
   * unused (ADR 0022). The file's name still carries its full count.
   */
  readonly withoutOptionalKeys?: true;
}

const definitions = new Map<string, ScriptDefinition>();
/**
 * Declares a script. The file name must carry the key count, so the count is readable from the
 * tree and cannot drift from the declaration; a second definition of a name must be the same one.
 */
export function defineScript(definition: ScriptDefinition): ScriptDefinition {
  const suffix = /-(\d+|n)\.lua$/.exec(definition.file)?.[1];
  const carried = definition.withoutOptionalKeys
    ? typeof definition.numberOfKeys === 'number' && Number(suffix) > definition.numberOfKeys
    : suffix === String(definition.numberOfKeys);
  if (!carried) {
    throw new Error(
      `script file ${definition.file} does not carry its key count (${definition.numberOfKeys})`,
    );
  }
  const known = definitions.get(definition.name);
  if (known) {
    if (
      known.file !== definition.file ||
      known.numberOfKeys !== definition.numberOfKeys ||
      known.withoutOptionalKeys !== definition.withoutOptionalKeys
    )
      throw new Error(`script ${definition.name} is defined twice`);
    return known;
  }
  definitions.set(definition.name, definition);
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

/** What a connection needs to run a script: ioredis's EVALSHA and EVAL, untyped. */
interface ScriptRunner {
  evalsha(...args: (string | number)[]): Promise<unknown>;
  eval(...args: (string | number)[]): Promise<unknown>;
}

/**
 * Adds a feature's scripts to a connection as methods of their names; safe to call more than once.
 * Each sends EVALSHA, and EVAL when Redis answers NOSCRIPT (a restarted or newly elected server:
 * refused unexecuted, so sending it again is safe). Not ioredis's defineCommand: every pipeline
 * ioredis makes copies each defined command onto itself, and auto-pipelining makes one per batch
 * of requests, so with the service's few dozen scripts that copy cost a command about a tenth
 * of the CPU of its Redis calls. EVALSHA is a command ioredis knows: auto-pipelined like any other,
 * and on a cluster grouped by the slot of its first key (its key count read, as for EVAL).
 */
export function registerScripts<Client extends Redis | Cluster>(
  redis: Client,
  scripts: readonly ScriptDefinition[],
): Client {
  const methods = redis as unknown as Record<string, unknown>;
  const runner = redis as unknown as ScriptRunner;
  for (const { name, file, numberOfKeys } of scripts) {
    if (typeof methods[name] === 'function') continue;
    const lua = source(file);
    // SHA1 because Redis names a cached script by it (not a security use).
    const sha = createHash('sha1').update(lua).digest('hex');
    methods[name] =
      numberOfKeys === 'n'
        ? (...args: (string | number)[]) =>
            runner.evalsha(sha, ...args).catch((error: unknown) => {
              if (!isNoScript(error)) throw error;
              return runner.eval(lua, ...args);
            })
        : (...args: (string | number)[]) =>
            runner.evalsha(sha, numberOfKeys, ...args).catch((error: unknown) => {
              if (!isNoScript(error)) throw error;
              return runner.eval(lua, numberOfKeys, ...args);
            });
  }
  return redis;
}

/** Redis's refusal of an EVALSHA whose script it does not hold (nothing ran). */
function isNoScript(error: unknown): boolean {
  return error instanceof Error && error.message.startsWith('NOSCRIPT');
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
