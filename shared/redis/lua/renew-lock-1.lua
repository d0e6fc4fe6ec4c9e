--[[
  Extends a lock (or lease) only if the caller still holds it.

  Input:
    KEYS[1] lock key
    ARGV[1] the holder's token
    ARGV[2] new time to live, in milliseconds
  Output:
    1 when extended, 0 when the caller no longer holds it
]]
if redis.call('GET', KEYS[1]) == ARGV[1] then
  return redis.call('PEXPIRE', KEYS[1], ARGV[2])
end
return 0
