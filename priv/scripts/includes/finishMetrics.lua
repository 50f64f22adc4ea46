--- @include "numbers"

-- Per-minute throughput, in BullMQ's encoding so every dashboard reads it:
-- `<metrics>` hash: count (finishes so far), prevTS (ms of the last data
-- point), prevCount (count at that point); `<metrics>:data` list, newest
-- first, one entry per elapsed minute, trimmed to `max_points`.
--
-- Metrics only describe the jobs, so a field another writer left garbled
-- restarts from zero instead of failing the finish it is recorded in (the
-- caller has checked the hash and the list are of their types).
local function record_metrics(metrics_key, max_points, now)
  local data_key = metrics_key .. ":data"
  local stored = redis.call("HMGET", metrics_key, "count", "prevTS", "prevCount")
  local before = is_integer_text(stored[1]) and tonumber(stored[1]) or 0
  redis.call("HSET", metrics_key, "count", before + 1)
  local prev_ts = as_number(stored[2])
  if not prev_ts then
    redis.call("HSET", metrics_key, "prevTS", now, "prevCount", 0)
    return
  end
  local minutes = math.floor(now / 60000) - math.floor(prev_ts / 60000)
  minutes = math.min(minutes, max_points)
  if minutes <= 0 then
    return
  end
  local prev_count = as_number(stored[3]) or 0
  -- The finishes since the last point belong to the oldest of the elapsed
  -- minutes; the minutes after it saw none. LPUSH in that order leaves the
  -- list newest first.
  redis.call("LPUSH", data_key, before - prev_count)
  local zeros = minutes - 1
  while zeros > 0 do
    local n = math.min(zeros, 5000)
    local chunk = {}
    for i = 1, n do
      chunk[i] = 0
    end
    redis.call("LPUSH", data_key, unpack(chunk))
    zeros = zeros - n
  end
  redis.call("LTRIM", data_key, 0, max_points - 1)
  redis.call("HSET", metrics_key, "prevTS", now, "prevCount", before)
end
