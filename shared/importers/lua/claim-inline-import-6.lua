--[[
  Claims the right to run a High-priority import inline, only if the import queue is idle.

  Input:
    KEYS[1] BullMQ wait list
    KEYS[2] BullMQ active list
    KEYS[3] BullMQ prioritized set
    KEYS[4] BullMQ delayed set
    KEYS[5] BullMQ paused list
    KEYS[6] the inline claim
    ARGV[1] the claimant's token
    ARGV[2] claim time to live, in milliseconds
  Output:
    1 when claimed; 0 when a job waits, runs, is delayed, or another inline import holds the claim

  Checking the queue and taking the claim in one script is what makes it race-free: two High
  requests arriving together cannot both see an idle queue and both run inline.
]]
if redis.call('LLEN', KEYS[1]) > 0 or redis.call('LLEN', KEYS[2]) > 0 or redis.call('ZCARD', KEYS[3]) > 0
  or redis.call('ZCARD', KEYS[4]) > 0 or redis.call('LLEN', KEYS[5]) > 0 then
  return 0
end
if redis.call('SET', KEYS[6], ARGV[1], 'NX', 'PX', ARGV[2]) then
  return 1
end
return 0
