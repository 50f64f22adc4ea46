-- Delayed jobs are scored due_ms * 4096 + seq. seq (0..4095) keeps jobs due in
-- the same millisecond in insertion order: one more than the highest score
-- already in that millisecond's range, held at the range's top when full.
local function delayed_score(delayed_key, due_ms)
  local low = due_ms * 4096
  local high = low + 4095
  local last = redis.call("ZREVRANGEBYSCORE", delayed_key, high, low, "WITHSCORES", "LIMIT", 0, 1)
  if last[2] == nil then
    return low
  end
  return math.min(tonumber(last[2]) + 1, high)
end
