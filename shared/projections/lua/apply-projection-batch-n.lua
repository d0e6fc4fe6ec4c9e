--[[
  Applies one batch of a projection on one log partition, fenced by the partition's checkpoint.

  Input:
    KEYS[1] the projection's checkpoint for this partition (last applied log entry id)
    KEYS[2 ..] projection documents touched by the batch (same partition, same slot)
    ARGV[1] the checkpoint the batch was read after ('0-0' when none)
    ARGV[2] the id of the batch's last log entry
    ARGV[3 ..] one value per document key: its JSON, or '' to delete it

  Output:
    the number of documents written, or
    -1 when the checkpoint moved (another replica or a rebuild got there first): nothing is written

  Documents and checkpoint change together, so a crash never applies an event twice or skips one.
]]
local current = redis.call('GET', KEYS[1]) or '0-0'
if current ~= ARGV[1] then
  return -1
end
for i = 2, #KEYS do
  local value = ARGV[i + 1]
  if value == '' then
    redis.call('DEL', KEYS[i])
  else
    redis.call('SET', KEYS[i], value)
  end
end
redis.call('SET', KEYS[1], ARGV[2])
return #KEYS - 1
