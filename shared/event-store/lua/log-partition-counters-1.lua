--[[
  A log partition's counters that trimming does not lower: the id of the last entry ever appended
  to it and how many entries ever were (XINFO STREAM), in a script so that a cluster client routes
  it by its key (it cannot route XINFO, whose key follows a subcommand).

  Input:
    KEYS[1] the log partition
  Output:
    {last-generated-id, entries-added}; {'0-0', 0} when the partition does not exist yet
]]
if redis.call('EXISTS', KEYS[1]) == 0 then
  return {'0-0', 0}
end
local info = redis.call('XINFO', 'STREAM', KEYS[1])
local lastId, added = '0-0', 0
for i = 1, #info, 2 do
  if info[i] == 'last-generated-id' then
    lastId = info[i + 1]
  elseif info[i] == 'entries-added' then
    added = info[i + 1]
  end
end
return {lastId, added}
