#!lua flags=no-writes
--[[
  failedReasons: one batch of the error groups index's first count (the
  dashboard's own, docs/protocol.md): failed jobs newest first, each with its
  failedReason, in one short call instead of a range read and a pipelined
  HGET per job (the dashboard's side of 1,000 HGETs cost more than folding
  their reasons; bench/grouping.py).

  KEYS[1] failed (zset, score = finishedOn)

  ARGV[1] key prefix "<prefix>:<queue>:" (job hashes are <prefix>:<queue>:<id>)
  ARGV[2] the highest score read ("+inf" at first)
  ARGV[3] how many members scored ARGV[2] the batches before read already
  ARGV[4] how many members to read (1 up)
  ARGV[5] the most bytes of a reason to answer (the dashboard folds no more:
          queues/read/error_folding.py, REASON_BYTES)

  Returns: {id, score, reason, id, score, reason, ...} newest first (score as
  Redis writes it; reason cut at ARGV[5] bytes, "" when the job hash is gone,
  is no hash or holds no failedReason); {"wrongtype", <type>} when KEYS[1] is
  neither missing nor a sorted set. Never a negative code: it changes nothing.

  Memory: read-only (no-writes), so it runs when Redis is over maxmemory.

  Events: none.
]]

local kind = redis.call("TYPE", KEYS[1]).ok
if kind ~= "none" and kind ~= "zset" then
  return {"wrongtype", kind}
end
local members = redis.call("ZREVRANGEBYSCORE", KEYS[1], ARGV[2], "-inf", "WITHSCORES",
  "LIMIT", ARGV[3], ARGV[4])
-- Cut here, not after the reply: a batch of 500 reasons of a megabyte each
-- was one reply of 500 MB for a dashboard that folds a few KB of each.
local most = tonumber(ARGV[5])
local reply = {}
for i = 1, #members, 2 do
  local reason = redis.pcall("HGET", ARGV[1] .. members[i], "failedReason")
  if type(reason) ~= "string" then
    reason = ""
  elseif #reason > most then
    reason = string.sub(reason, 1, most)
  end
  reply[#reply + 1] = members[i]
  reply[#reply + 1] = members[i + 1]
  reply[#reply + 1] = reason
end
return reply
