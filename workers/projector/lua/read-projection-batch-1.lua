--[[
  Reads the next batch of one log partition for a projection, with the events its entries name
  and the documents they touch: a live pass's reads in one round trip instead of one per event.

  Input:
    KEYS[1] the log partition
    ARGV[1] where to start: '-' or '(<entry id>' (after the checkpoint)
    ARGV[2] how many entries of the projection's type (or copies, 'unusual' below) at most
    ARGV[3] the aggregate type the projection reads (the events of others are not read)
    ARGV[4] what the stream key of each aggregate of that type in this partition starts with, its id
            following (keys.aggregateStreamsIn)
    ARGV[5] what the document key of each aggregate in this partition starts with, its id following
            (keys.projectionDocumentsIn), or '' when the projection keeps its documents elsewhere
    ARGV[6] how many entries at most, those of other types included (optional; ARGV[2] when
            absent): entries of other types cost a field comparison each, so a projection steps
            over thousands of them (another aggregate's import) in one call rather than one per
            ARGV[2] (issue 43)

  Output: { count, lastId, named, documents, unusual }
    count     how many entries the batch holds (0: none, lastId nil): ARGV[6] at most, and it ends
              with the ARGV[2]th entry of the projection's type when there are that many
    lastId    the id of its last entry
    named     for each entry referring to an event of type ARGV[3], flat: its position in the batch
              (from 1), the aggregate id, the version, and the event as its stream stores it (nil
              when the stream does not hold it: the caller refuses that)
    documents the JSON (nil when absent) of each document those entries touch, once each, in the
              order first touched; none when ARGV[5] is ''
    unusual   flat: position, {id, fields} of each entry that is not a reference to an event (a copy
              of its event, written before ADR 0020), left for the caller to read as XRANGE gives it

  Only what the caller uses is answered (no field names, nothing of other types' entries): every
  reply element costs a conversion here and a parse in the caller. The streams and documents are
  not declared: they are found from the entries. Every one shares the log partition's hash tag, so
  the script stays in KEYS[1]'s slot (Redis Cluster allows reading undeclared keys of the script's
  own slot). A reference holds 'type', 'id' (lower-cased), 'version' in this order
  (append-events-6.lua; log-reader.ts reads the same fields).
]]
local limit = tonumber(ARGV[2])
local entries = redis.call('XRANGE', KEYS[1], ARGV[1], '+', 'COUNT', ARGV[6] or ARGV[2])
local named, documents, unusual, seen = {}, {}, {}, {}
local count, taken = 0, 0
for i, entry in ipairs(entries) do
  if taken == limit then break end
  count = i
  local fields = entry[2]
  if fields[1] == 'type' and fields[3] == 'id' and fields[5] == 'version' then
    if fields[2] == ARGV[3] then
      local id = '0-' .. fields[6]
      local stored = redis.call('XRANGE', ARGV[4] .. fields[4], id, id)[1]
      taken = taken + 1
      named[#named + 1] = i
      named[#named + 1] = fields[4]
      named[#named + 1] = fields[6]
      -- The stream entry's one field is the event (stored-envelope.ts).
      named[#named + 1] = stored and stored[2][2] or false
      if ARGV[5] ~= '' and not seen[fields[4]] then
        seen[fields[4]] = true
        documents[#documents + 1] = redis.call('GET', ARGV[5] .. fields[4])
      end
    end
  else
    taken = taken + 1
    unusual[#unusual + 1] = i
    unusual[#unusual + 1] = entry
  end
end
local last = entries[count]
return { count, last and last[1] or false, named, documents, unusual }
