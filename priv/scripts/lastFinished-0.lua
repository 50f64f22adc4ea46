#!lua flags=no-writes
--[[
  lastFinished: when each queue's newest kept completed and failed jobs
  finished (their finishedOn, the sets' score) and when its oldest waiting
  job was added, read-only. The overview's "no workers" rows say since when
  from it: one call instead of a pipeline of reads a queue (1.7 ms of the
  dashboard's CPU for 100 rows).

  KEYS: none. Every key read derives from a key prefix in ARGV, so call this
  only where all those keys live on one node (a single Redis server; a
  cluster reader uses a pipeline instead: queues/read/counts.py).

  ARGV[1..n] key prefixes "<prefix>:<queue>:", one per queue

  Returns: per queue in ARGV order, three strings: the newest completed and
  the newest failed score as Redis gives them (a score is a double), and the
  `timestamp` field of the job at the wait list's tail (the next to be taken,
  so the oldest waiting one); "" where the structure is empty, of another
  type (another writer's garbage), or the job has no timestamp.

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

local function oldest_waiting(prefix)
  local id = redis.pcall("LINDEX", prefix .. "wait", -1)
  if type(id) ~= "string" then
    return ""
  end
  local added = redis.pcall("HGET", prefix .. id, "timestamp")
  return type(added) == "string" and added or ""
end

local answer = {}
for i = 1, #ARGV do
  answer[#answer + 1] = newest(ARGV[i] .. "completed")
  answer[#answer + 1] = newest(ARGV[i] .. "failed")
  answer[#answer + 1] = oldest_waiting(ARGV[i])
end
return answer
