--[[
  Releases a lock only if the caller still holds it.

  Input:
    KEYS[1] lock key
    ARGV[1] the holder's token
  Output:
    1 when released, 0 when the lock had expired or belongs to someone else
]]
if redis.call('GET', KEYS[1]) == ARGV[1] then
  return redis.call('DEL', KEYS[1])
end
return 0
