// The two Lua scripts of ref-command (bench/baselines/ref-command.cjs), also run bare by
// bench/append-redis-cost.bench.ts: what a locked, fenced append needs in Redis, and nothing else.
'use strict';

/** KEYS: lock, record. ARGV: token, lock ttl ms. {0} when the lock is taken, else {1, version, state}. */
const LOCK_AND_LOAD = `if not redis.call('SET', KEYS[1], ARGV[1], 'NX', 'PX', ARGV[2]) then return {0} end
local record = redis.call('HMGET', KEYS[2], 'version', 'state')
return {1, record[1], record[2]}`;

/**
 * KEYS: stream, log partition, record, lock. ARGV: expected version, token, envelope, state.
 * The new version, or -1 when the stream is not at the expected version.
 */
const APPEND_AND_UNLOCK = `local expected = tonumber(ARGV[1])
if redis.call('XLEN', KEYS[1]) ~= expected then return -1 end
local version = expected + 1
redis.call('XADD', KEYS[1], '0-' .. version, 'event', ARGV[3])
redis.call('XADD', KEYS[2], '*', 'event', ARGV[3])
redis.call('HSET', KEYS[3], 'version', version, 'state', ARGV[4])
if redis.call('GET', KEYS[4]) == ARGV[2] then redis.call('DEL', KEYS[4]) end
return version`;

module.exports = { LOCK_AND_LOAD, APPEND_AND_UNLOCK };
