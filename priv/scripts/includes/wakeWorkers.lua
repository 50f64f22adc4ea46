--- @include "numbers"

-- Workers block on the marker zset (BZPOPMIN). Member "0" at score 0 means
-- "a job is ready now"; member "1" scored with a due time (ms) tells a worker
-- how long it may sleep before the next delayed job is due.
local function wake_workers(marker_key)
  redis.call("ZADD", marker_key, "0", "0")
end

-- The due time encoded in a delayed score (see delayedScore.lua), nil for a
-- score no writer of delayed jobs makes (+inf / -inf).
local function due_of_score(score)
  local number = as_number(score)
  if number == nil then
    return nil
  end
  return math.floor(number / 4096)
end

-- The due time of the first delayed job. `after_ms` (optional) looks only
-- at jobs due later than that: a job still delayed although it is due (one
-- a worker left there because its keys are broken) must not make workers
-- wake again and again for it.
local function next_delayed_due(delayed_key, after_ms)
  local first
  if after_ms then
    first = redis.call("ZRANGEBYSCORE", delayed_key, (after_ms + 1) * 4096, "+inf",
      "WITHSCORES", "LIMIT", 0, 1)
  else
    first = redis.call("ZRANGE", delayed_key, 0, 0, "WITHSCORES")
  end
  if first[2] then
    return due_of_score(first[2])
  end
  return nil
end

local function arm_delayed_marker(marker_key, delayed_key)
  local due = next_delayed_due(delayed_key)
  if due then
    redis.call("ZADD", marker_key, due, "1")
  end
end
