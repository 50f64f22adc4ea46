-- Workers block on the marker zset (BZPOPMIN). Member "0" at score 0 means
-- "a job is ready now"; member "1" scored with a due time (ms) tells a worker
-- how long it may sleep before the next delayed job is due.
local function wake_workers(marker_key)
  redis.call("ZADD", marker_key, 0, "0")
end

-- The due time encoded in a delayed score (see delayedScore.lua).
local function next_delayed_due(delayed_key)
  local first = redis.call("ZRANGE", delayed_key, 0, 0, "WITHSCORES")
  if first[2] then
    return math.floor(tonumber(first[2]) / 4096)
  end
  return nil
end

local function arm_delayed_marker(marker_key, delayed_key)
  local due = next_delayed_due(delayed_key)
  if due then
    redis.call("ZADD", marker_key, due, "1")
  end
end
