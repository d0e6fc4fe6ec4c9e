--[[
  Ends the rewrite of one partition of the global log: copies the entries appended to the partition
  since the caller's copy was made, as they are, and puts the copy in the partition's place, in one
  atomic step. Every entry keeps its id, so projector checkpoints stay valid.

  Input:
    KEYS[1] the log partition
    KEYS[2] the rewritten copy of it, holding its entries up to ARGV[1] with the same ids
    ARGV[1] the id of the last entry copied ('0-0' when none was)
    ARGV[2] the most entries this step copies; when more are waiting, the caller copies on first
  Output:
    the number of entries copied here, or
    -1 when more than ARGV[2] entries are waiting: nothing is written
]]
local from = '-'
if ARGV[1] ~= '0-0' then
  from = '(' .. ARGV[1]
end
local limit = tonumber(ARGV[2])
local tail = redis.call('XRANGE', KEYS[1], from, '+', 'COUNT', limit + 1)
if #tail > limit then
  return -1
end
for _, entry in ipairs(tail) do
  redis.call('XADD', KEYS[2], entry[1], unpack(entry[2]))
end
if redis.call('EXISTS', KEYS[2]) == 0 then
  return 0
end
-- New entries must keep getting ids above every id the partition ever gave, and the count of
-- entries ever appended (the lag metric's, which trimmed entries are part of) stays.
local info = redis.call('XINFO', 'STREAM', KEYS[1])
local lastId, added
for i = 1, #info, 2 do
  if info[i] == 'last-generated-id' then
    lastId = info[i + 1]
  elseif info[i] == 'entries-added' then
    added = info[i + 1]
  end
end
redis.call('XSETID', KEYS[2], lastId, 'ENTRIESADDED', added)
redis.call('RENAME', KEYS[2], KEYS[1])
return #tail
