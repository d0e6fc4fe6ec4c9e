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
            KEYS[5] and KEYS[6] are read only with a request id; an append without one leaves them
            out (appendEventsWithoutRequestId: every declared key costs Redis CPU)
    ARGV[1] expected version (the stream length the caller folded)
    ARGV[2] the caller's lock token ('' when it holds none): released here if still the caller's
    ARGV[3] the aggregate's id as its keys spell it (lower case), published on ARGV[5]
    ARGV[4] the aggregate's type
    ARGV[5] channel announcing that the aggregate changed (its id is published there)
    ARGV[6] the folded state after the events, as JSON
    ARGV[7] the state's shape version (stateVersion), or '' for a type without one
    ARGV[8] number of events N
    ARGV[9 .. 8+N] event envelopes as the stream stores them (JSON without what the stream's key
            and entry ids say: stored-envelope.ts), versions expected+1 .. expected+N
    Then, only for an append with a request id, an attachment or a field to remove (the tail; a
    plain append sends none of it: every argument costs Redis CPU, ADR 0022):
    ARGV[9+N] the caller's request id, scoped by the caller: '<caller>:<request id>' ('' for none)
    ARGV[10+N] now, unix ms
    ARGV[11+N] how long a request id is remembered, in ms
    ARGV[12+N] number M of attachment fields removed from the record
    ARGV[13+N .. 12+N+M] attachment fields removed from the record, before any is written (an
            erased account's credential and personal-data key)
    ARGV[13+N+M ..] attachment field/value pairs written to the record (e.g. a credential)

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
local count = tonumber(ARGV[8])
local current = redis.call('XLEN', KEYS[1])
if current ~= expected then
  -- The same append sent again (its connection dropped after it ran) finds its own events, each
  -- envelope unique by its event id: it was written, and answers so instead of "not written".
  if count > 0 and current >= expected + count then
    local stored = redis.call('XRANGE', KEYS[1], '0-' .. (expected + 1), '0-' .. (expected + count))
    for i = 1, count do
      if stored[i] == nil or stored[i][2][2] ~= ARGV[8 + i] then
        return -1
      end
    end
    return expected + count
  end
  return -1
end

for i = 1, count do
  local version = expected + i
  redis.call('XADD', KEYS[1], '0-' .. version, 'event', ARGV[8 + i])
  redis.call('XADD', KEYS[2], '*', 'type', ARGV[4], 'id', ARGV[3], 'version', version)
end

local version = expected + count
-- The tail (request id, removals, attachments) is there only when the caller had any of them.
local tail = 9 + count
local hasTail = #ARGV >= tail
local attachmentsFrom = tail
if hasTail then
  local removed = tonumber(ARGV[tail + 3])
  if removed > 0 then
    redis.call('HDEL', KEYS[3], unpack(ARGV, tail + 4, tail + 3 + removed))
  end
  attachmentsFrom = tail + 4 + removed
end
-- One HSET for the version, the state, its shape version and the attachments written with them
-- (one command per append, not one per field: each command costs Redis CPU, ADR 0022).
if ARGV[7] == '' then
  redis.call('HSET', KEYS[3], 'version', version, 'state', ARGV[6], unpack(ARGV, attachmentsFrom, #ARGV))
else
  redis.call('HSET', KEYS[3], 'version', version, 'state', ARGV[6], 'stateVersion', ARGV[7],
    unpack(ARGV, attachmentsFrom, #ARGV))
end

if hasTail and ARGV[tail] ~= '' and count > 0 then
  local requestId = ARGV[tail]
  local now = tonumber(ARGV[tail + 1])
  local window = tonumber(ARGV[tail + 2])
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

-- In-process caches of the record (sign-in) drop it at once on every replica; projectors, webhook
-- dispatchers and event streams wake.
redis.call('PUBLISH', ARGV[5], ARGV[3])
-- Released only by its holder: a lock that expired and was taken by another stays theirs.
if ARGV[2] ~= '' and redis.call('GET', KEYS[4]) == ARGV[2] then
  redis.call('DEL', KEYS[4])
end
return version
