#!lua flags=no-writes
--[[
  queueCounts: the overview's numbers for many queues in one call, read-only.
  Per queue: the length of every state, the paused flag and the per-minute
  completed/failed metrics. One reply instead of a dozen per queue keeps the
  overview cheap when a deployment has dozens of queues.

  KEYS: none. Every key read derives from a key prefix in ARGV, so call this
  only where all those keys live on one node (a single Redis server; a
  cluster reader uses a pipeline instead).

  ARGV[1] metrics points per series (0 = no metrics)
  ARGV[2..n] key prefixes "<prefix>:<queue>:", one per queue

  Returns: per queue, in ARGV order, 9 integers then (when metrics are asked
  for) 2 lists:
    wait length, paused length, prioritized, delayed, active, waiting-children,
    completed, failed, paused flag (1 = meta has "paused"),
    metrics:completed:data range (newest first), metrics:failed:data range.
  A key of the wrong type (another writer's garbage) reads as 0 / empty.

  Memory: read-only (no-writes), so it runs when Redis is over maxmemory.

  Events: none.
]]

local points = tonumber(ARGV[1])

-- A wrong-typed key makes redis.pcall return an error table: count it as empty.
local function read(command, key, ...)
  local reply = redis.pcall(command, key, ...)
  if type(reply) == "table" and reply.err then
    return nil
  end
  return reply
end

local function size(command, key, ...)
  return read(command, key, ...) or 0
end

local answer = {}
for i = 2, #ARGV do
  local base = ARGV[i]
  answer[#answer + 1] = size("LLEN", base .. "wait")
  answer[#answer + 1] = size("LLEN", base .. "paused")
  answer[#answer + 1] = size("ZCARD", base .. "prioritized")
  answer[#answer + 1] = size("ZCARD", base .. "delayed")
  answer[#answer + 1] = size("LLEN", base .. "active")
  answer[#answer + 1] = size("ZCARD", base .. "waiting-children")
  answer[#answer + 1] = size("ZCARD", base .. "completed")
  answer[#answer + 1] = size("ZCARD", base .. "failed")
  answer[#answer + 1] = size("HEXISTS", base .. "meta", "paused")
  if points > 0 then
    answer[#answer + 1] = read("LRANGE", base .. "metrics:completed:data", 0, points - 1) or {}
    answer[#answer + 1] = read("LRANGE", base .. "metrics:failed:data", 0, points - 1) or {}
  end
end
return answer
