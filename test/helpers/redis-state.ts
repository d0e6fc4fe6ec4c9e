import { keyHoldingNodes, type RedisClient, scanKeys } from '../../shared/redis/connections';

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

/**
 * Every key under a prefix with its whole value as text, read by type (not DUMP, whose RDB form
 * may LZF-compress a string and so hide what it holds): for tests that search Redis for a secret.
 */
const CONTENTS_SCRIPT = `
local function flatten(value, out)
  if type(value) == 'table' then
    for _, inner in ipairs(value) do flatten(inner, out) end
  elseif value ~= nil and value ~= false then
    out[#out + 1] = tostring(value)
  end
end
local cursor = '0'
local out = {}
repeat
  local page = redis.call('SCAN', cursor, 'MATCH', ARGV[1], 'COUNT', 1000)
  cursor = page[1]
  for _, key in ipairs(page[2]) do
    local kind = redis.call('TYPE', key)['ok']
    local parts = {}
    if kind == 'string' then flatten(redis.call('GET', key), parts)
    elseif kind == 'hash' then flatten(redis.call('HGETALL', key), parts)
    elseif kind == 'list' then flatten(redis.call('LRANGE', key, 0, -1), parts)
    elseif kind == 'set' then flatten(redis.call('SMEMBERS', key), parts)
    elseif kind == 'zset' then flatten(redis.call('ZRANGE', key, 0, -1, 'WITHSCORES'), parts)
    elseif kind == 'stream' then flatten(redis.call('XRANGE', key, '-', '+'), parts)
    end
    out[#out + 1] = key
    out[#out + 1] = table.concat(parts, '\\n')
  end
until cursor == '0'
return out
`;

export async function redisContents(redis: RedisClient, prefix: string): Promise<Record<string, string>> {
  const pattern = `${prefix.replace(/[*?[\]\\]/g, '\\$&')}*`;
  const perNode = await Promise.all(
    keyHoldingNodes(redis).map((node) => node.eval(CONTENTS_SCRIPT, 0, pattern) as Promise<string[]>),
  );
  const contents: Record<string, string> = {};
  for (const flat of perNode) {
    for (let i = 0; i + 1 < flat.length; i += 2) contents[flat[i] as string] = flat[i + 1] as string;
  }
  return contents;
}

/**
 * Removes every key under a prefix, for a test that fills Redis with tens of thousands of keys:
 * the suite shares one server, and every later snapshot (redisState's SCAN, inside a script that
 * holds the server) walks the whole keyspace. One key a command, so it works on a cluster too.
 */
export async function removeKeys(redis: RedisClient, prefix: string): Promise<void> {
  for await (const keys of scanKeys(redis, `${prefix}*`)) {
    await Promise.all(keys.map((key) => redis.unlink(key)));
  }
}
