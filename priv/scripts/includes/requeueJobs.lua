--- @include "emitEvent"
--- @include "readyTarget"
--- @include "callSliced"

-- requeueJob and requeueJobs share one KEYS layout: the source set, then
-- wait, paused, meta, active, prioritized, pc, marker, events.
local function requeue_keys(keys)
  return {wait = keys[2], paused = keys[3], meta = keys[4], active = keys[5],
    prioritized = keys[6], pc = keys[7], marker = keys[8], events = keys[9]}
end

-- Jobs going back to run after a retry (prev = failed / completed) or a
-- promotion (prev = delayed). A retry forgets the last run's outcome so the
-- job looks waiting again; a promotion just clears its delay. The caller has
-- already taken the ids out of their source set.
-- `q` is the readyTarget table plus `events`. The target list and whether
-- workers may be woken are read once for the whole batch; ids whose hash is
-- gone are dropped rather than handed to a worker as empty jobs.
-- Returns how many jobs were requeued.
local function requeue_jobs(q, queue_base, ids, prev)
  local list, wake = ready_list(q)
  local cap = events_cap(q.meta)
  local moved = 0
  -- Plain jobs are pushed together at the end: one LPUSH of many ids keeps
  -- their order and saves a call per job on bulk retries.
  local plain = {}
  for _, job_id in ipairs(ids) do
    local job_key = queue_base .. job_id
    if redis.call("EXISTS", job_key) == 1 then
      if prev == "delayed" then
        redis.call("HSET", job_key, "delay", 0)
      else
        redis.call("HDEL", job_key, "finishedOn", "processedOn", "returnvalue", "failedReason")
      end
      local priority = tonumber(redis.call("HGET", job_key, "priority")) or 0
      if priority > 0 then
        redis.call("ZADD", q.prioritized, priority_score(priority, q.pc), job_id)
      else
        plain[#plain + 1] = job_id
      end
      emit_event(q.events, cap, "waiting", "jobId", job_id, "prev", prev)
      moved = moved + 1
    end
  end
  call_sliced("LPUSH", list, plain)
  if wake and moved > 0 then
    wake_workers(q.marker)
  end
  return moved
end
