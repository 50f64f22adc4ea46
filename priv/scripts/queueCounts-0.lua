#!lua flags=no-writes
--[[
  queueCounts: the overview's numbers for many queues in one call, read-only.
  Per queue: the length of every state, the paused flag and, when asked for,
  what finished lately: the per-minute completed/failed metrics with their
  hashes (where the lists end), and the finished sets counted by score
  (finishedOn) for queues whose workers keep no metrics. One reply instead of
  a dozen per queue keeps the overview cheap when a deployment has dozens of
  queues.

  KEYS: none. Every key read derives from a key prefix in ARGV, so call this
  only where all those keys live on one node (a single Redis server; a
  cluster reader uses a pipeline instead).

  ARGV[1] metrics points per series (0 = no metrics and no recent finishes)
  ARGV[2] recent window start (ms): finishes from here on are "recent"
  ARGV[3] previous window start (ms): finishes from here to ARGV[2] are "previous"
  ARGV[4..n] key prefixes "<prefix>:<queue>:", one per queue

  Returns: per queue, in ARGV order, 9 integers then (when metrics are asked
  for) 2 lists, 2 more lists and 6 integers:
    wait length, paused length, prioritized, delayed, active, waiting-children,
    completed, failed, paused flag (1 = meta has "paused"),
    metrics:completed:data range (newest first), metrics:failed:data range,
    HMGET metrics:completed count prevTS prevCount, the same of metrics:failed,
    the finished sets counted by score: the oldest kept completed job's score
    (-1 when none), where the recent count starts (ARGV[2], or that oldest
    score when later: a set trimmed by removeOnComplete covers less), recent
    completed, recent failed, previous completed, previous failed (for a
    queue that keeps metrics, -1, 0, 0, 0, 0, 0 without counting: unused).
  A key of the wrong type (another writer's garbage) reads as 0 / empty.

  Memory: read-only (no-writes), so it runs when Redis is over maxmemory.

  Events: none.
]]

local points = tonumber(ARGV[1])
local recent_start = ARGV[2]
local previous_start = ARGV[3]

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

-- Finishes by finishedOn (the sets' score): cost O(log n) per count, whatever
-- the sets hold. Scores go back as the strings Redis gave (a score is a double).
local function finished_counts(base)
  local completed, failed = base .. "completed", base .. "failed"
  local oldest = (read("ZRANGE", completed, 0, 0, "WITHSCORES") or {})[2]
  local from = recent_start
  if oldest and tonumber(oldest) > tonumber(recent_start) then
    from = oldest
  end
  return {
    oldest or "-1",
    from,
    size("ZCOUNT", completed, from, "+inf"),
    size("ZCOUNT", failed, from, "+inf"),
    size("ZCOUNT", completed, previous_start, "(" .. recent_start),
    size("ZCOUNT", failed, previous_start, "(" .. recent_start),
  }
end

local answer = {}
for i = 4, #ARGV do
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
    local n = #answer
    answer[n + 1] = read("LRANGE", base .. "metrics:completed:data", 0, points - 1) or {}
    answer[n + 2] = read("LRANGE", base .. "metrics:failed:data", 0, points - 1) or {}
    answer[n + 3] = read("HMGET", base .. "metrics:completed", "count", "prevTS", "prevCount") or {}
    answer[n + 4] = read("HMGET", base .. "metrics:failed", "count", "prevTS", "prevCount") or {}
    -- A queue with metrics is read from them: its finished sets are not counted
    -- (the six figures are placeholders then; half the calls of an overview).
    if #answer[n + 1] > 0 or #answer[n + 2] > 0 or answer[n + 3][1] or answer[n + 4][1] then
      answer[n + 5], answer[n + 6], answer[n + 7] = "-1", "0", 0
      answer[n + 8], answer[n + 9], answer[n + 10] = 0, 0, 0
    else
      local finished = finished_counts(base)
      for i = 1, 6 do
        answer[n + 4 + i] = finished[i]
      end
    end
  end
end
return answer
