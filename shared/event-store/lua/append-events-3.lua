--[[
  Appends events to one aggregate, fenced by its version.

  Input:
    KEYS[1] aggregate stream (entry ids 0-<version>)
    KEYS[2] global log partition of the aggregate
    KEYS[3] aggregate record (hash: version, state, attachments)
    ARGV[1] expected version (the stream length the caller folded)
    ARGV[2] number of events N
    ARGV[3 .. 2+N] event envelopes as JSON, versions expected+1 .. expected+N
    ARGV[3+N] the folded state after the events, as JSON
    ARGV[4+N ..] attachment field/value pairs written to the record (e.g. a credential)

  Output:
    the new version, or
    -1 when the stream's version is not the expected one (then nothing is written)

  The version check and every write happen in this one script, so a holder whose lock expired
  while it was deciding cannot write stale events: the fence rejects it.
]]
local expected = tonumber(ARGV[1])
local count = tonumber(ARGV[2])
local current = redis.call('XLEN', KEYS[1])
if current ~= expected then
  return -1
end

for i = 1, count do
  local envelope = ARGV[2 + i]
  redis.call('XADD', KEYS[1], '0-' .. (expected + i), 'event', envelope)
  redis.call('XADD', KEYS[2], '*', 'event', envelope)
end

local version = expected + count
redis.call('HSET', KEYS[3], 'version', version, 'state', ARGV[3 + count])
for i = 4 + count, #ARGV, 2 do
  redis.call('HSET', KEYS[3], ARGV[i], ARGV[i + 1])
end
return version
