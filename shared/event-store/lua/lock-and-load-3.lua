--[[
  Takes an aggregate's lock and, if taken, reads its record and whether the caller's request was
  applied already: one round trip instead of three.

  Input:
    KEYS[1] the aggregate's lock
    KEYS[2] the aggregate's record (hash: version, state, stateVersion)
    KEYS[3] the request ids applied to the aggregate (hash: '<caller>:<request id>' -> 'first:last'),
            read only with a request id: a caller without one leaves it out
            (lockAndLoadWithoutRequestId: every declared key costs Redis CPU)
    ARGV[1] the caller's token
    ARGV[2] lock time to live, in milliseconds
    ARGV[3] the caller's request id as '<caller>:<request id>'; absent for none (an argument less
            for Redis to read)
  Output:
    {0} when someone else holds the lock, or
    {1, version, state, applied, stateVersion} when the caller now holds it: version, state and
    stateVersion nil for a new aggregate (stateVersion nil too for a record written before it
    existed); applied nil, or the 'first:last' versions of the events the request appended
]]
if not redis.call('SET', KEYS[1], ARGV[1], 'NX', 'PX', ARGV[2]) then
  return {0}
end
local record = redis.call('HMGET', KEYS[2], 'version', 'state', 'stateVersion')
local applied = false
if ARGV[3] then
  applied = redis.call('HGET', KEYS[3], ARGV[3])
end
return {1, record[1], record[2], applied, record[3]}
