--[[
  One page of a lexicographic range of a sorted set whose scores are all equal (the users
  projection's e-mail indexes), found by rank, and the range's size, in one atomic read.

  Input:
    KEYS[1] the sorted set (every score 0)
    ARGV[1] the range's lower bound as ZRANGEBYLEX takes it: '-' or '[<prefix>'
    ARGV[2] its upper bound: '+' or '(<prefix><0xFF>'
    ARGV[3] skip: how many members of the range to pass over
    ARGV[4] take: how many to answer at most
  Output:
    { the number of members in the range, { the page's members, in order } }

  ZRANGEBYLEX ... LIMIT <skip> <take> walks the skipped members one by one (a page 50,000 members
  in costs a walk of 50,000); here the range's first rank is counted (ZLEXCOUNT from the start,
  O(log N)) and the page is read by rank (ZRANGE, O(log N) plus the page), whatever the skip.
]]
local key = KEYS[1]
local count = redis.call('ZLEXCOUNT', key, ARGV[1], ARGV[2])
local skip = tonumber(ARGV[3])
local take = tonumber(ARGV[4])
if skip >= count or take <= 0 then
  return { count, {} }
end
-- The members below the range: those before '[<prefix>' are those up to '(<prefix>'.
local first = 0
if ARGV[1] ~= '-' then
  first = redis.call('ZLEXCOUNT', key, '-', '(' .. string.sub(ARGV[1], 2))
end
local last = math.min(count, skip + take) - 1
return { count, redis.call('ZRANGE', key, first + skip, first + last) }
