import { keyHoldingNodes, type RedisClient } from '../../shared/redis/connections';

/**
 * Every key under a prefix with a digest of its value (DUMP, so any change of any type shows),
 * read in one atomic script. Comparing two of these proves a request changed nothing in Redis.
 * Cheap while the prefix holds a few hundred keys, which a test app's does.
 */
const SNAPSHOT_SCRIPT = `
local cursor = '0'
local out = {}
repeat
  local page = redis.call('SCAN', cursor, 'MATCH', ARGV[1], 'COUNT', 1000)
  cursor = page[1]
  for _, key in ipairs(page[2]) do
    out[#out + 1] = key
    out[#out + 1] = redis.sha1hex(redis.call('DUMP', key) or '')
  end
until cursor == '0'
return out
`;

/** Keys whose change is expected and is not "state": e.g. the sign-in throttle's counters. */
export type IgnoredKeys = readonly RegExp[];

export async function redisState(
  redis: RedisClient,
  prefix: string,
  ignored: IgnoredKeys = [],
): Promise<Record<string, string>> {
  const pattern = `${prefix.replace(/[*?[\]\\]/g, '\\$&')}*`;
  // Each server holding keys (every master of a cluster) reports its own.
  const perNode = await Promise.all(
    keyHoldingNodes(redis).map((node) => node.eval(SNAPSHOT_SCRIPT, 0, pattern) as Promise<string[]>),
  );
  const state: Record<string, string> = {};
  for (const flat of perNode) {
    for (let i = 0; i + 1 < flat.length; i += 2) {
      const key = flat[i] as string;
      if (!ignored.some((ignore) => ignore.test(key))) state[key] = flat[i + 1] as string;
    }
  }
  return state;
}
