#!lua flags=no-writes
--[[
  lastFinished: when each queue's newest kept completed and failed jobs
  finished (their finishedOn, the sets' score), read-only. The overview's
  "no workers" rows say since when from it: one call instead of a pipeline
  of two ZRANGEs a queue (1.7 ms of the dashboard's CPU for 100 rows).

  KEYS: none. Every key read derives from a key prefix in ARGV, so call this
  only where all those keys live on one node (a single Redis server; a
  cluster reader uses a pipeline instead: queues/read/counts.py).

  ARGV[1..n] key prefixes "<prefix>:<queue>:", one per queue

  Returns: per queue in ARGV order, two scores as the strings Redis gives
  (a score is a double): the newest completed, the newest failed; "" where
  the set is empty or a key of another type (another writer's garbage).

  Memory: read-only (no-writes), so it runs when Redis is over maxmemory.

  Events: none.
]]

local function newest(key)
  local reply = redis.pcall("ZRANGE", key, -1, -1, "WITHSCORES")
  if type(reply) == "table" and not reply.err and reply[2] then
    return reply[2]
  end
  return ""
end

local answer = {}
for i = 1, #ARGV do
  answer[#answer + 1] = newest(ARGV[i] .. "completed")
  answer[#answer + 1] = newest(ARGV[i] .. "failed")
end
return answer
