--- @include "wakeWorkers"

-- Where a job that is ready to run goes, 5.x layout: a paused queue holds its
-- ready jobs in `paused` (resume renames it back). Workers are not woken while
-- the queue is paused or already runs its global concurrency limit.
-- `q` is a table with the queue's key names: meta, active, wait, paused,
-- prioritized, pc, marker.
local function ready_list(q)
  local meta = redis.call("HMGET", q.meta, "paused", "concurrency")
  if meta[1] then
    return q.paused, false
  end
  -- A concurrency that is not a number sets no limit (as when it is unset).
  local concurrency = as_number(meta[2])
  if concurrency and redis.call("LLEN", q.active) >= concurrency then
    return q.wait, false
  end
  return q.wait, true
end

-- Prioritized score: priority in the high bits, an insertion counter in the
-- low 32 so equal priorities run in insertion order.
local function priority_score(priority, pc_key)
  local seq = redis.call("INCR", pc_key) % 4294967296
  return priority * 4294967296 + seq
end

-- Make a job runnable: LPUSH (RPUSH when lifo) onto wait/paused, or into
-- prioritized when it has a priority; wake a worker when one may take it.
-- Returns the key the job went to.
local function push_ready(q, job_id, priority, lifo)
  local list, wake = ready_list(q)
  local target
  if priority and priority > 0 then
    redis.call("ZADD", q.prioritized, priority_score(priority, q.pc), job_id)
    target = q.prioritized
  else
    redis.call(lifo and "RPUSH" or "LPUSH", list, job_id)
    target = list
  end
  if wake then
    wake_workers(q.marker)
  end
  return target
end
