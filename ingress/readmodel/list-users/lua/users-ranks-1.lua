--[[
  How many of one partition's members in a page range lie below each of some candidate members:
  ListUsers' search for where a deep page starts across the partitions (users.reader.ts).

  Input:
    KEYS[1] one partition's e-mail index for the filter (a sorted set, every score 0)
    ARGV[1] the page range's lower bound: '-' or '[<text>'
    ARGV[2 ..] the candidates (index members of any partition)
  Output:
    { for each candidate, the number of members in [ARGV[1], candidate) }
]]
local counts = {}
for i = 2, #ARGV do
  counts[#counts + 1] = redis.call('ZLEXCOUNT', KEYS[1], ARGV[1], '(' .. ARGV[i])
end
return counts
