--[[
  Counts an import as Pending for its submitter, unless the submitter has `limit` Pending already.

  Input:
    KEYS[1] the submitter's Pending imports (sorted set: import job id -> when it was counted, ms)
    ARGV[1] the import job id
    ARGV[2] the limit (MAX_PENDING_IMPORTS_PER_USER)
    ARGV[3] how long a count may live, in seconds (IMPORT_RESULT_TTL_SECONDS, the record's own life)
  Output:
    1 when counted (or it was counted already); 0 when the submitter is at the limit

  Checking and adding in one script is what holds the limit across ingress replicas. Members
  older than a record can live are dropped first, so a count whose release was lost cannot block
  its submitter for longer than that (the ingress also drops members whose record has ended).
]]
local time = redis.call('TIME')
local nowMs = tonumber(time[1]) * 1000 + math.floor(tonumber(time[2]) / 1000)
local ttlSeconds = tonumber(ARGV[3])
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', '(' .. (nowMs - ttlSeconds * 1000))
if redis.call('ZSCORE', KEYS[1], ARGV[1]) then
  return 1
end
if redis.call('ZCARD', KEYS[1]) >= tonumber(ARGV[2]) then
  return 0
end
redis.call('ZADD', KEYS[1], nowMs, ARGV[1])
redis.call('EXPIRE', KEYS[1], ttlSeconds)
return 1
