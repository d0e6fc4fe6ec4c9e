--[[
  One partition's part of a ListUsers answer, read in one atomic step: how many of its accounts
  match, how many of those lie in the page's range, and (for a shallow page) that range's first
  members.

  Input:
    KEYS[1] one partition's e-mail index for the filter (a sorted set, every score 0)
    ARGV[1] the matches' lower bound as ZRANGEBYLEX takes it: '-' or '[<prefix>'
    ARGV[2] their upper bound: '+' or '(<prefix><0xFF>'
    ARGV[3] the page range's lower bound: ARGV[1], or higher after an `after` cursor ('[...')
    ARGV[4] how many members of the page range to answer from its start (0: none)
  Output:
    { matches, members in the page range, the rank of its first member in KEYS[1],
      { its first ARGV[4] members, in order } }

  Counted with ZLEXCOUNT (O(log N)) and read by rank (ZRANGE, O(log N) plus the members), whatever
  the range's place in the set: ZRANGEBYLEX ... LIMIT walks what it skips.
]]
local key = KEYS[1]
local matches = redis.call('ZLEXCOUNT', key, ARGV[1], ARGV[2])
if matches == 0 then
  return { 0, 0, 0, {} }
end
local inPage = matches
if ARGV[3] ~= ARGV[1] then
  inPage = redis.call('ZLEXCOUNT', key, ARGV[3], ARGV[2])
end
-- The members below the page range: those before '[<bound>' are those up to '(<bound>'.
local first = 0
if ARGV[3] ~= '-' then
  first = redis.call('ZLEXCOUNT', key, '-', '(' .. string.sub(ARGV[3], 2))
end
local head = math.min(tonumber(ARGV[4]), inPage)
if head <= 0 then
  return { matches, inPage, first, {} }
end
return { matches, inPage, first, redis.call('ZRANGE', key, first, first + head - 1) }
