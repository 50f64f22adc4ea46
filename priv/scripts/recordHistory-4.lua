#!lua
--[[
  recordHistory: the history collector records what it folded from one
  queue's events stream (one minute of them at most), together with how far it
  read, so that a collector taking over resumes exactly where this write ended.

  KEYS[1] the queue's history state "echomq:history:{<prefix>:<queue>}:state"
          (hash: cursor, running totals, last backlog sample)
  KEYS[2] the minute's hash "...:m:<minute>"
  KEYS[3] the hour's hash "...:h:<hour>" (the hour holding that minute)
  KEYS[4] the queue's recent minutes "...:recent" (string: ARGV[7] slots of
          three big-endian unsigned 32-bit integers, the minute, its
          completed and its failed, the minute m in slot m mod ARGV[7]); the
          overview reads a queue's last half hour from it with one GET

  ARGV[1] the cursor this write starts from: the stream id the collector
          read after ("" when the queue was never collected)
  ARGV[2] the new cursor: the id of the last event folded in
  ARGV[3] when the minute's hash expires (ms since the epoch, PEXPIREAT)
  ARGV[4] when the hour's hash expires (ms since the epoch, PEXPIREAT)
  ARGV[5] JSON {"add": {field: "n"}, "max": {field: "n"}, "set": {field: "n"}}
          (values are decimal strings): "add" is added to the minute, the
          hour and the totals; "max" raises the minute's and the hour's
          field to n when it is larger; "set" overwrites the field in the
          minute, the hour and the state (a gauge such as the backlog)
  ARGV[6] the minute (ms since the epoch // 60,000)
  ARGV[7] slots in KEYS[4] (minutes it keeps)
  ARGV[8] when KEYS[4] expires (ms since the epoch, PEXPIREAT): once every
          slot is older than the overview's window

  Returns: 1 recorded; 0 the state's cursor is not ARGV[1] (another collector
  recorded since this one read: nothing is written, the caller has lost its
  lease). Refused with a WRONGTYPE error naming the key, nothing written,
  when one of the hashes is not a hash, KEYS[4] is not a string, or a hash
  holds a field "add" names that HINCRBY cannot count on: one queue's broken
  history (a hand edit), which the collector reports and leaves until it is
  repaired.

  Memory: refused when Redis is over maxmemory (no allow-oom flag): history is
  worth less than the workers' own writes.

  Events: none.
]]

--- @include "keyCheck"

local refused = structure_refusal({KEYS[1], "hash", KEYS[2], "hash", KEYS[3], "hash",
  KEYS[4], "string"})
if refused then
  return refused
end
local cursor = redis.call("HGET", KEYS[1], "cursor") or ""
if cursor ~= ARGV[1] then
  return 0
end
local batch = cjson.decode(ARGV[5])

-- HINCRBY fails on a field that is no integer, after the writes before it:
-- every field added to is checked in all three hashes first.
local added = {}
for field in pairs(batch["add"] or {}) do
  added[#added + 1] = field
end
for i = 1, #added > 0 and 3 or 0 do
  local held = redis.call("HMGET", KEYS[i], unpack(added))
  for n = 1, #added do
    if held[n] and not is_integer_text(held[n]) then
      return redis.error_reply("WRONGTYPE key " .. KEYS[i] .. " holds a hash whose field "
        .. added[n] .. " is no integer, expected a hash; nothing was changed")
    end
  end
end

for field, amount in pairs(batch["add"] or {}) do
  redis.call("HINCRBY", KEYS[2], field, amount)
  redis.call("HINCRBY", KEYS[3], field, amount)
  redis.call("HINCRBY", KEYS[1], field, amount)
end
for field, value in pairs(batch["max"] or {}) do
  for i = 2, 3 do
    local held = tonumber(redis.call("HGET", KEYS[i], field))
    if held == nil or held < tonumber(value) then
      redis.call("HSET", KEYS[i], field, value)
    end
  end
end
for field, value in pairs(batch["set"] or {}) do
  for i = 1, 3 do
    redis.call("HSET", KEYS[i], field, value)
  end
end
redis.call("HSET", KEYS[1], "cursor", ARGV[2])
if redis.call("EXISTS", KEYS[2]) == 1 then
  redis.call("PEXPIREAT", KEYS[2], ARGV[3])
end
if redis.call("EXISTS", KEYS[3]) == 1 then
  redis.call("PEXPIREAT", KEYS[3], ARGV[4])
end

-- Every batch marks its minute in the recent minutes, a backlog sample too
-- (one every 10 s): a slot holding its minute says the collector covered it,
-- so the reader tells "nothing finished" from "nobody was counting". A slot
-- holding a later minute (a batch of a minute older than the window) is left.
local minute = tonumber(ARGV[6])
local at = (minute % tonumber(ARGV[7])) * 3
local completed, failed = tonumber(batch["add"] and batch["add"]["c"]) or 0,
  tonumber(batch["add"] and batch["add"]["f"]) or 0
local held = redis.call("BITFIELD", KEYS[4], "GET", "u32", "#" .. at)[1]
if held == minute then
  redis.call("BITFIELD", KEYS[4], "OVERFLOW", "SAT",
    "INCRBY", "u32", "#" .. (at + 1), completed, "INCRBY", "u32", "#" .. (at + 2), failed)
elseif held < minute then
  redis.call("BITFIELD", KEYS[4], "SET", "u32", "#" .. at, minute,
    "SET", "u32", "#" .. (at + 1), completed, "SET", "u32", "#" .. (at + 2), failed)
end
redis.call("PEXPIREAT", KEYS[4], ARGV[8])
return 1
