--[[
  Trims one partition of the global log: removes its entries before a given id (XTRIM MINID), and
  notes the newest entry it removed, so that a reader asking for what came after an older
  position is told it is gone (LOG_RETENTION, ADR 0020) instead of getting a silent gap.

  Input:
    KEYS[1] the log partition
    KEYS[2] the id of the newest entry ever trimmed from it (a string; absent: none was)
    ARGV[1] the least entry id kept: every entry before it is removed
  Output:
    the number of entries removed (0 when none was before ARGV[1])
]]
local newest = redis.call('XREVRANGE', KEYS[1], '(' .. ARGV[1], '-', 'COUNT', 1)
if #newest == 0 then
  return 0
end
local removed = redis.call('XTRIM', KEYS[1], 'MINID', '=', ARGV[1])
redis.call('SET', KEYS[2], newest[1][1])
return removed
