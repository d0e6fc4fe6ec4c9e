--[[
  Moves one subscription's delivery position in one log partition, if it is still where the
  caller read it (another replica may have moved it since: then nothing is written).

  Input:
    KEYS[1] the cursor hash (webhookCursor)
    ARGV[1] the checkpoint the caller read ('' when there was none)
    ARGV[2] the new checkpoint (last log entry id delivered or given up on)
    ARGV[3] attempts made on the event being retried ('0' when none)
    ARGV[4] that event's id ('' when none)
    ARGV[5] when its next attempt is due (unix ms; '0' when none)
    ARGV[6] the replay id now applied ('' to leave it as it is)

  Output: 1 when moved, 0 when the checkpoint was not ARGV[1]
]]
local current = redis.call('HGET', KEYS[1], 'checkpoint')
if (current or '') ~= ARGV[1] then
  return 0
end
redis.call('HSET', KEYS[1], 'checkpoint', ARGV[2], 'attempt', ARGV[3], 'eventId', ARGV[4], 'nextAt', ARGV[5])
if ARGV[6] ~= '' then
  redis.call('HSET', KEYS[1], 'replayId', ARGV[6])
end
return 1
