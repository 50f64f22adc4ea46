--- @include "emitEvent"
--- @include "readyTarget"
--- @include "callSliced"
--- @include "keyCheck"
--- @include "locateJob"

-- requeueJob and requeueJobs share one KEYS layout: the source set, then
-- wait, paused, meta, active, prioritized, pc, marker, events, and the
-- sorted-set states a job coming back must not also be in: completed,
-- failed, delayed, waiting-children (the source among them is passed over).
local function requeue_keys(keys, source_name)
  local q = {source = keys[1], wait = keys[2], paused = keys[3], meta = keys[4],
    active = keys[5], prioritized = keys[6], pc = keys[7], marker = keys[8], events = keys[9]}
  q.others = {{name = "prioritized", key = keys[6]}}
  for index, name in ipairs({"completed", "failed", "delayed", "waiting-children"}) do
    if name ~= source_name then
      q.others[#q.others + 1] = {name = name, key = keys[9 + index]}
    end
  end
  return q
end

-- Everything a requeue may write, checked before its first write.
local function requeue_refusal(q)
  local expected = {q.source, "zset", q.wait, "list", q.paused, "list",
    q.meta, "hash", q.active, "list", q.pc, "counter", q.marker, "zset",
    q.events, "stream"}
  for _, state in ipairs(q.others) do
    expect(expected, state.key, "zset")
  end
  return structure_refusal(expected)
end

-- Jobs going back to run after a retry (prev = failed / completed) or a
-- promotion (prev = delayed). A retry forgets the last run's outcome so the
-- job looks waiting again; a promotion just clears its delay.
-- Every id is checked before anything is written: one whose keys are broken
-- (keyCheck.lua), or that another sorted-set state also holds, or that
-- `listed` names (id -> the list state holding it too, found by
-- listedJobs-4.lua; nil for none), is left in its source set and reported.
-- The others leave the source set together: by rank when `first_rank` is
-- given and every id moves (`ids` are then the source's ranks first_rank on,
-- as the caller's ZRANGEBYSCORE from -inf read them, and ZREMRANGEBYRANK
-- finds none of them by member), else by id.
-- The target list and whether workers may be woken are read once.
-- Returns how many jobs were requeued, the skipped ones as a flat list of
-- id, reason pairs, and, when `reason_bytes` > 0, the requeued ids each with
-- the first `reason_bytes` bytes of the failedReason it held before ("" when
-- none; read with the checks, since a retry deletes it): the dashboard keeps
-- them to say later what became of the jobs it moved.
local function requeue_jobs(q, queue_base, ids, prev, listed, first_rank, reason_bytes)
  local holder = zset_holders(q.others, ids)
  local movable, prioritized, skipped, reported = {}, {}, {}, {}
  local retry = prev ~= "delayed"
  for _, job_id in ipairs(ids) do
    local job_key = queue_base .. job_id
    -- A sound job's check is this one HMGET, written out here: read_job
    -- (jobRead.lua), which names what is wrong, runs only when something is.
    -- Through job_checker's closure and read_job's varargs for every job,
    -- the script took about 5% more of Redis per job (docs/benchmarks.md, perf4).
    local raw = redis.pcall("HMGET", job_key, "name", "timestamp", "priority", "failedReason")
    local priority = raw[3]
    local problem
    if raw["err"] or not (raw[1] or raw[2]) or (priority and not as_number(priority)) then
      problem = read_job(job_key, 3, 3, "name", "timestamp", "priority")
    end
    if problem or holder[job_id] or (listed and listed[job_id]) then
      skipped_job(skipped, job_id, problem, prev, holder, listed)
    else
      movable[#movable + 1] = job_id
      if priority and as_number(priority) > 0 then
        prioritized[job_id] = as_number(priority)
      end
      if reason_bytes > 0 then
        reported[#reported + 1] = job_id
        reported[#reported + 1] = string.sub(raw[4] or "", 1, reason_bytes)
      end
    end
  end
  if #movable == 0 then
    return 0, skipped, reported
  end

  if first_rank and #movable == #ids then
    redis.call("ZREMRANGEBYRANK", q.source, first_rank, first_rank + #ids - 1)
  else
    call_sliced("ZREM", q.source, movable)
  end
  local list, wake = ready_list(q)
  local cap = events_cap(q.meta)
  -- Plain jobs are pushed together at the end: one LPUSH of many ids keeps
  -- their order and saves a call per job on bulk retries.
  local plain = {}
  for _, job_id in ipairs(movable) do
    local job_key = queue_base .. job_id
    if retry then
      redis.call("HDEL", job_key, "finishedOn", "processedOn", "returnvalue", "failedReason")
    else
      redis.call("HSET", job_key, "delay", 0)
    end
    local priority = prioritized[job_id]
    if priority then
      redis.call("ZADD", q.prioritized, priority_score(priority, q.pc), job_id)
    else
      plain[#plain + 1] = job_id
    end
    emit_event(q.events, cap, "waiting", "jobId", job_id, "prev", prev)
  end
  call_sliced("LPUSH", list, plain)
  if wake then
    wake_workers(q.marker)
  end
  return #movable, skipped, reported
end
