--[[
  Applies one batch of a projection on one log partition, fenced by the partition's checkpoint.

  Input:
    KEYS[1] the projection's checkpoint for this partition (last applied log entry id)
    KEYS[2] how many log entries the projection has applied from this partition
    KEYS[3 ..] every key the batch writes (documents and index keys, all in one slot)
    ARGV[1] the checkpoint the batch was read after ('0-0' when none)
    ARGV[2] the id of the batch's last log entry
    ARGV[3] the writes, a JSON array of [op, key index (into KEYS), arguments...]:
            ["set", k, json] ["del", k] ["hset", k, field, value] ["hdel-if", k, field, expected]
            ["zadd", k, member, score] ["zrem", k, member] ["sadd", k, member] ["srem", k, member]
    ARGV[4] how many log entries the batch covers (its skipped entries of other types included)

  Output:
    the number of writes made, or
    -1 when the checkpoint moved (another replica or a rebuild got there first): nothing is written

  Documents, index entries and checkpoint change together, so a crash never applies an event
  twice or skips one. `hdel-if` removes a field only while it still holds this document's value:
  a lookup another aggregate has taken over since (a fantasy id moved to another player) stays.
]]
local current = redis.call('GET', KEYS[1]) or '0-0'
if current ~= ARGV[1] then
  return -1
end
local writes = cjson.decode(ARGV[3])
for _, write in ipairs(writes) do
  local op, key = write[1], KEYS[write[2]]
  if op == 'set' then
    redis.call('SET', key, write[3])
  elseif op == 'del' then
    redis.call('DEL', key)
  elseif op == 'hset' then
    redis.call('HSET', key, write[3], write[4])
  elseif op == 'hdel-if' then
    if redis.call('HGET', key, write[3]) == write[4] then
      redis.call('HDEL', key, write[3])
    end
  elseif op == 'zadd' then
    redis.call('ZADD', key, write[4], write[3])
  elseif op == 'zrem' then
    redis.call('ZREM', key, write[3])
  elseif op == 'sadd' then
    redis.call('SADD', key, write[3])
  elseif op == 'srem' then
    redis.call('SREM', key, write[3])
  else
    return redis.error_reply('unknown projection write ' .. tostring(op))
  end
end
redis.call('SET', KEYS[1], ARGV[2])
-- The count makes the lag metric two reads (log length minus count) instead of a range walk. A
-- replay from the start resets it; a checkpoint older than the count (written before it existed)
-- leaves it absent, so the lag reads as unknown until a rebuild rather than as a wrong number.
if ARGV[1] == '0-0' then
  redis.call('SET', KEYS[2], ARGV[4])
elseif redis.call('EXISTS', KEYS[2]) == 1 then
  redis.call('INCRBY', KEYS[2], ARGV[4])
end
return #writes
