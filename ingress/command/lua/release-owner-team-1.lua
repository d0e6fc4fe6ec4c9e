--[[
  Gives back an owner's team slot reserved for a create that wrote nothing; a slot whose team was
  created (score +inf) is kept.

  Input:
    KEYS[1] the owner's teams (sorted set, see reserve-owner-team-1.lua)
    ARGV[1] the team id
  Output:
    1 when the reservation was released, 0 when there was none or its team exists
]]
local score = redis.call('ZSCORE', KEYS[1], ARGV[1])
if score and score ~= 'inf' then
  return redis.call('ZREM', KEYS[1], ARGV[1])
end
return 0
