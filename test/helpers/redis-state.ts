import { createHash } from 'node:crypto';

import { type RedisClient, scanKeys } from '../../shared/redis/connections';

/*
 * Both readers walk the prefix with SCAN pages from the client, one round trip a page, and read the
 * keys of a page in parallel. They used to run as one Lua script each, which held the server for
 * the whole walk: the suite shares one Redis, and a SCAN MATCH walks every key in it, so on a busy
 * machine a snapshot froze every other test's commands for as long as the keyspace took to walk.
 * The price is atomicity, which the callers never needed: they compare a prefix at rest (nothing
 * writes to it between the two readings) or search it for a secret.
 */

/** Keys whose change is expected and is not "state": e.g. the sign-in throttle's counters. */
export type IgnoredKeys = readonly RegExp[];

/** Keys a SCAN page looks at: a few milliseconds of the server's time, a few round trips a snapshot. */
const SCAN_PAGE = 5_000;

function prefixPattern(prefix: string): string {
  return `${prefix.replace(/[*?[\]\\]/g, '\\$&')}*`;
}

/**
 * Every key under a prefix with a digest of its value (DUMP, so any change of any type shows).
 * Comparing two of these proves a request changed nothing in Redis. A key deleted between its SCAN
 * and its DUMP reads as the digest of nothing, as a key that changed would.
 */
export async function redisState(
  redis: RedisClient,
  prefix: string,
  ignored: IgnoredKeys = [],
): Promise<Record<string, string>> {
  const state: Record<string, string> = {};
  for await (const page of scanKeys(redis, prefixPattern(prefix), SCAN_PAGE)) {
    const kept = page.filter((key) => !ignored.some((ignore) => ignore.test(key)));
    const dumps = await Promise.all(kept.map((key) => redis.dumpBuffer(key)));
    kept.forEach((key, i) => {
      state[key] = createHash('sha1')
        .update(dumps[i] ?? Buffer.alloc(0))
        .digest('hex');
    });
  }
  return state;
}

/** Every string inside a reply, in order, whatever its nesting (streams, hashes read as objects). */
function flatten(value: unknown, out: string[]): string[] {
  if (Array.isArray(value)) for (const inner of value) flatten(inner, out);
  else if (Buffer.isBuffer(value) || typeof value === 'string') out.push(value.toString());
  else if (typeof value === 'number') out.push(String(value));
  else if (value !== null && typeof value === 'object') flatten(Object.entries(value), out);
  return out;
}

async function readWhole(redis: RedisClient, key: string): Promise<unknown> {
  switch (await redis.type(key)) {
    case 'string':
      return redis.get(key);
    case 'hash':
      return redis.hgetall(key);
    case 'list':
      return redis.lrange(key, 0, -1);
    case 'set':
      return redis.smembers(key);
    case 'zset':
      return redis.zrange(key, 0, -1, 'WITHSCORES');
    case 'stream':
      return redis.xrange(key, '-', '+');
    default:
      return null;
  }
}

/**
 * Every key under a prefix with its whole value as text, read by type (not DUMP, whose RDB form
 * may LZF-compress a string and so hide what it holds): for tests that search Redis for a secret.
 */
export async function redisContents(redis: RedisClient, prefix: string): Promise<Record<string, string>> {
  const contents: Record<string, string> = {};
  for await (const page of scanKeys(redis, prefixPattern(prefix), SCAN_PAGE)) {
    const values = await Promise.all(page.map((key) => readWhole(redis, key)));
    page.forEach((key, i) => {
      contents[key] = flatten(values[i], []).join('\n');
    });
  }
  return contents;
}

/**
 * Removes every key under a prefix, for a test that fills Redis with tens of thousands of keys: the
 * suite shares one server, and every later SCAN MATCH (the snapshots above) walks the whole keyspace.
 * One key a command, so it works on a cluster too.
 */
export async function removeKeys(redis: RedisClient, prefix: string): Promise<void> {
  for await (const keys of scanKeys(redis, prefixPattern(prefix), SCAN_PAGE)) {
    await Promise.all(keys.map((key) => redis.unlink(key)));
  }
}
