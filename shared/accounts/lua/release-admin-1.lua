--[[
  Takes one account out of the enabled Admins, unless it is the last one: the guard that keeps at
  least one enabled Admin, however many demotions, disables and deletes race (on any replica).

  Input:
    KEYS[1] the enabled Admins (set of user ids)
    ARGV[1] the user id leaving them
  Output:
    1 when it was taken out (or was not among them: nothing to guard),
    0 when it is the last enabled Admin (nothing changed)
]]
if redis.call('SISMEMBER', KEYS[1], ARGV[1]) == 0 then
  return 1
end
if redis.call('SCARD', KEYS[1]) <= 1 then
  return 0
end
redis.call('SREM', KEYS[1], ARGV[1])
return 1
