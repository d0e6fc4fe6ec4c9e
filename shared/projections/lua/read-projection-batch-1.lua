--[[
  Reads the next batch of one log partition for a projection, with the events its entries name
  and the documents they touch: a live pass's reads in one round trip instead of one per event.

  Input:
    KEYS[1] the log partition
    ARGV[1] where to start: '-' or '(<entry id>' (after the checkpoint)
    ARGV[2] how many entries at most
    ARGV[3] the aggregate type the projection reads (the events of others are not read)
    ARGV[4] what the stream key of each aggregate of that type in this partition starts with, its id
            following (keys.aggregateStreamsIn)
    ARGV[5] what the document key of each aggregate in this partition starts with, its id following
            (keys.projectionDocumentsIn), or '' when the projection keeps its documents elsewhere

  Output: { entries, events, documents }
    entries   the log entries, as XRANGE answers them
    events    one per entry: the aggregate stream entry ({id, fields}) of the event it names when of
              the type read, else nil (another type, or a copy of its event: written before ADR 0020),
              nil also when the stream does not hold it (the caller refuses that)
    documents key, value (nil when absent) of each document the entries of the type read touch,
              once each, in the order first touched; none when ARGV[5] is ''

  The streams and documents are not declared: they are found from the entries. Every one shares
  the log partition's hash tag, so the script stays in KEYS[1]'s slot (Redis Cluster allows
  reading undeclared keys of the script's own slot). A log entry referring to its event holds the
  fields 'type', 'id' (lower-cased), 'version' in this order (append-events-6.lua, log-reader.ts).
]]
local entries = redis.call('XRANGE', KEYS[1], ARGV[1], '+', 'COUNT', ARGV[2])
local events, documents, seen = {}, {}, {}
for i, entry in ipairs(entries) do
  local fields = entry[2]
  events[i] = false
  if fields[1] == 'type' and fields[2] == ARGV[3] and fields[3] == 'id' and fields[5] == 'version' then
    local id = '0-' .. fields[6]
    local stored = redis.call('XRANGE', ARGV[4] .. fields[4], id, id)
    if stored[1] then
      events[i] = stored[1]
    end
    if ARGV[5] ~= '' then
      local key = ARGV[5] .. fields[4]
      if not seen[key] then
        seen[key] = true
        documents[#documents + 1] = key
        documents[#documents + 1] = redis.call('GET', key)
      end
    end
  end
end
return { entries, events, documents }
