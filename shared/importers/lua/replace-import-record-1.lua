--[[
  Replaces an import's record with an edited copy (an erased account's e-mail scrubbed from it),
  unless the record changed since the caller read it.

  Input:
    KEYS[1] the import's record (string: JSON)
    ARGV[1] the record as the caller read it
    ARGV[2] the record to write in its place; its time to live is kept
  Output:
    1 when replaced, 0 when the record is gone or changed meanwhile (the caller reads it again)
]]
if redis.call('GET', KEYS[1]) ~= ARGV[1] then
  return 0
end
redis.call('SET', KEYS[1], ARGV[2], 'KEEPTTL')
return 1
