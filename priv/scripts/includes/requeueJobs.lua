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
  local check, at = job_checker({"priority"}, {}, {"failedReason"})
  local holder = zset_holders(q.others, ids)
  local movable, priorities, skipped, reported = {}, {}, {}, {}
  for _, job_id in ipairs(ids) do
    local problem, fields = check(queue_base .. job_id)
    if not skipped_job(skipped, job_id, problem, prev, holder, listed) then
      movable[#movable + 1] = job_id
      priorities[#movable] = as_number(fields[at.priority]) or 0
      if reason_bytes > 0 then
        reported[#reported + 1] = job_id
        reported[#reported + 1] = string.sub(fields[at.failedReason] or "", 1, reason_bytes)
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
  for index, job_id in ipairs(movable) do
    local job_key = queue_base .. job_id
    if prev == "delayed" then
      redis.call("HSET", job_key, "delay", 0)
    else
      redis.call("HDEL", job_key, "finishedOn", "processedOn", "returnvalue", "failedReason")
    end
    if priorities[index] > 0 then
      redis.call("ZADD", q.prioritized, priority_score(priorities[index], q.pc), job_id)
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
