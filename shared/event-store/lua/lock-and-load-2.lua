--[[
  Takes an aggregate's lock and, if taken, reads its record: one round trip instead of two.

  Input:
    KEYS[1] the aggregate's lock
    KEYS[2] the aggregate's record (hash: version, state)
    ARGV[1] the caller's token
    ARGV[2] lock time to live, in milliseconds
  Output:
    {0} when someone else holds the lock, or
    {1, version, state} when the caller now holds it (version and state nil for a new aggregate)
]]
if not redis.call('SET', KEYS[1], ARGV[1], 'NX', 'PX', ARGV[2]) then
  return {0}
end
local record = redis.call('HMGET', KEYS[2], 'version', 'state')
return {1, record[1], record[2]}
