--[[
  Rewrites an aggregate's stream with the same entries in another form (events written before
  their fields were sealed, sealed now), fenced by its length and by the record attachment the new
  form depends on (the aggregate's key), which it may write in the same step.

  Input:
    KEYS[1] the aggregate stream (entry ids 0-<version>)
    KEYS[2] the aggregate record (hash: version, state, stateVersion, attachments)
    ARGV[1] the stream's length N when the caller read it
    ARGV[2] the attachment field the new form depends on
    ARGV[3] that field's value when the caller read it ('' when absent)
    ARGV[4] what to do with that field: 'keep', 'set' (to ARGV[5]) or 'remove'
    ARGV[5] the value it is set to ('' unless ARGV[4] is 'set')
    ARGV[6 .. 5+N] the entries' envelopes as JSON, versions 1 .. N
  Output:
    N, or
    -1 when the stream's length or the attachment changed since the caller read them (an append
    came first): nothing is written

  Streams only grow, so an unchanged length is an unchanged stream. The entries keep their ids (their
  versions), and the record's version and state are not touched.
]]
local count = tonumber(ARGV[1])
if redis.call('XLEN', KEYS[1]) ~= count then
  return -1
end
if (redis.call('HGET', KEYS[2], ARGV[2]) or '') ~= ARGV[3] then
  return -1
end
redis.call('DEL', KEYS[1])
for i = 1, count do
  redis.call('XADD', KEYS[1], '0-' .. i, 'event', ARGV[5 + i])
end
if ARGV[4] == 'set' then
  redis.call('HSET', KEYS[2], ARGV[2], ARGV[5])
elseif ARGV[4] == 'remove' then
  redis.call('HDEL', KEYS[2], ARGV[2])
end
return count
