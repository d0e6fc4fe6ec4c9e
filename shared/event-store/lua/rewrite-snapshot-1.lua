--[[
  Rewrites an aggregate's snapshot (the folded state in its record) in the current shape, fenced
  by the version it was folded at.

  Input:
    KEYS[1] the aggregate's record (hash: version, state, stateVersion)
    ARGV[1] the version the state was folded at (the stream's length then)
    ARGV[2] the state, folded from the stream, as JSON
    ARGV[3] the state's shape version
  Output:
    1 when rewritten, or
    -1 when the record is at another version (an append came first): nothing is written

  An append in between wrote its own state, in the current shape: it is kept, never overwritten
  with an older fold.
]]
if tonumber(redis.call('HGET', KEYS[1], 'version')) ~= tonumber(ARGV[1]) then
  return -1
end
redis.call('HSET', KEYS[1], 'state', ARGV[2], 'stateVersion', ARGV[3])
return 1
