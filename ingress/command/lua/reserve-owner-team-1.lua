--[[
  Reserves one of an owner's team slots for a team about to be created, within the bound. A slot is
  held from the reservation on, so concurrent creates (on any replica) can never pass the bound.

  Input:
    KEYS[1] the owner's teams (sorted set: team id -> +inf once created, or the deadline of a
            reservation in unix ms)
    ARGV[1] the team id
    ARGV[2] the bound: teams one owner may hold
    ARGV[3] now, unix ms
    ARGV[4] the reservation's deadline, unix ms
  Output:
    {1} reserved, or held already (a retry of the same create): its deadline is renewed
    {0, team id, ...} refused at the bound, with the reservations past their deadline (at most 20):
      the caller settles each (confirmed if its team exists, else released) and may try once more
]]
local score = redis.call('ZSCORE', KEYS[1], ARGV[1])
if score then
  if score ~= 'inf' then
    redis.call('ZADD', KEYS[1], ARGV[4], ARGV[1])
  end
  return {1}
end
if redis.call('ZCARD', KEYS[1]) < tonumber(ARGV[2]) then
  redis.call('ZADD', KEYS[1], ARGV[4], ARGV[1])
  return {1}
end
local stale = redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', '(' .. ARGV[3], 'LIMIT', 0, 20)
return {0, unpack(stale)}
