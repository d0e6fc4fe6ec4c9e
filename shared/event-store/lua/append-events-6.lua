--[[
  Appends events to one aggregate, fenced by its version, records the caller's request id with
  them, and releases the caller's lock.

  Input:
    KEYS[1] aggregate stream (entry ids 0-<version>)
    KEYS[2] global log partition of the aggregate
    KEYS[3] aggregate record (hash: version, state, stateVersion, attachments)
    KEYS[4] the aggregate's lock
    KEYS[5] the request ids applied to the aggregate (hash: '<caller>:<request id>' -> 'first:last'
            version; a request id belongs to its caller)
    KEYS[6] when each of those was applied (sorted set: '<caller>:<request id>' -> unix ms)
            KEYS[5] and KEYS[6] are read only with a request id (ARGV[5]); an append without one
            leaves them out (appendEventsWithoutRequestId: every declared key costs Redis CPU)
    ARGV[1] expected version (the stream length the caller folded)
    ARGV[2] number of events N
    ARGV[3] channel announcing that the aggregate changed (its id is published there)
    ARGV[4] the caller's lock token ('' when it holds none): released here if still the caller's
    ARGV[5] the caller's request id, scoped by the caller: '<caller>:<request id>' ('' for none)
    ARGV[6] now, unix ms
    ARGV[7] how long a request id is remembered, in ms
    ARGV[8] the aggregate's id as its keys spell it (lower case), published on ARGV[3]
    ARGV[9] the aggregate's type
    ARGV[10 .. 9+N] event envelopes as the stream stores them (JSON without what the stream's key
            and entry ids say: stored-envelope.ts), versions expected+1 .. expected+N
    ARGV[10+N] the folded state after the events, as JSON
    ARGV[11+N] number M of attachment fields removed from the record
    ARGV[12+N .. 11+N+M] attachment fields removed from the record, before any is written (an
            erased account's credential and personal-data key)
    ARGV[12+N+M ..] attachment field/value pairs written to the record (e.g. a credential)

  Output:
    the new version, or
    -1 when the stream's version is not the expected one (then nothing is written or released),
    unless the events at versions expected+1 .. expected+N are these very envelopes: the same
    append sent twice, answered with its version again (nothing is written twice)

  The version check and every write happen in this one script, so a holder whose lock expired
  while it was deciding cannot write stale events: the fence rejects it. The request id is written
  with the events it produced, so a retry whose first attempt's answer was lost finds them
  (lock-and-load-3.lua) instead of applying the command twice.
]]
local expected = tonumber(ARGV[1])
local count = tonumber(ARGV[2])
local current = redis.call('XLEN', KEYS[1])
if current ~= expected then
  -- The same append sent again (its connection dropped after it ran) finds its own events, each
  -- envelope unique by its event id: it was written, and answers so instead of "not written".
  if count > 0 and current >= expected + count then
    local stored = redis.call('XRANGE', KEYS[1], '0-' .. (expected + 1), '0-' .. (expected + count))
    for i = 1, count do
      if stored[i] == nil or stored[i][2][2] ~= ARGV[9 + i] then
        return -1
      end
    end
    return expected + count
  end
  return -1
end

for i = 1, count do
  local version = expected + i
  redis.call('XADD', KEYS[1], '0-' .. version, 'event', ARGV[9 + i])
  redis.call('XADD', KEYS[2], '*', 'type', ARGV[9], 'id', ARGV[8], 'version', version)
end

local version = expected + count
local removed = tonumber(ARGV[11 + count])
if removed > 0 then
  redis.call('HDEL', KEYS[3], unpack(ARGV, 12 + count, 11 + count + removed))
end
-- One HSET for the version, the state and the attachment fields written with them (one command
-- per append, not one per field: issue 22 counted them).
redis.call('HSET', KEYS[3], 'version', version, 'state', ARGV[10 + count], unpack(ARGV, 12 + count + removed, #ARGV))

local requestId = ARGV[5]
if requestId ~= '' and count > 0 then
  local now = tonumber(ARGV[6])
  local window = tonumber(ARGV[7])
  redis.call('HSET', KEYS[5], requestId, (expected + 1) .. ':' .. version)
  redis.call('ZADD', KEYS[6], now, requestId)
  -- Forget ids older than the window, a bounded number per append so that no call grows long.
  local expired = redis.call('ZRANGEBYSCORE', KEYS[6], '-inf', now - window, 'LIMIT', 0, 100)
  if #expired > 0 then
    redis.call('HDEL', KEYS[5], unpack(expired))
    redis.call('ZREM', KEYS[6], unpack(expired))
  end
  -- An aggregate left alone for a whole window forgets them all.
  redis.call('PEXPIRE', KEYS[5], window)
  redis.call('PEXPIRE', KEYS[6], window)
end

-- In-process caches of the record (sign-in) drop it at once on every replica.
redis.call('PUBLISH', ARGV[3], ARGV[8])
-- Released only by its holder: a lock that expired and was taken by another stays theirs.
if ARGV[4] ~= '' and redis.call('GET', KEYS[4]) == ARGV[4] then
  redis.call('DEL', KEYS[4])
end
return version
