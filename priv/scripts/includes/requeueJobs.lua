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
-- The others leave the source set together.
-- The target list and whether workers may be woken are read once.
-- Returns how many jobs were requeued, the skipped ones as a flat list of
-- id, reason pairs, the requeued ids, and the failedReason each held before
-- (false when none; read with the checks, since a retry deletes it): the
-- dashboard keeps them to say later what became of the jobs it moved.
local function requeue_jobs(q, queue_base, ids, prev, listed)
  local check, at = job_checker({"priority"}, {}, {"failedReason"})
  local holder = zset_holders(q.others, ids)
  local movable, priorities, skipped, reasons = {}, {}, {}, {}
  for _, job_id in ipairs(ids) do
    local problem, fields = check(queue_base .. job_id)
    local also = holder[job_id] or (listed and listed[job_id])
    if not problem and also then
      problem = "states:" .. prev .. "," .. also
    end
    if problem then
      skipped[#skipped + 1] = job_id
      skipped[#skipped + 1] = problem
    else
      movable[#movable + 1] = job_id
      priorities[#movable] = as_number(fields[at.priority]) or 0
      reasons[#movable] = fields[at.failedReason]
    end
  end
  if #movable == 0 then
    return 0, skipped, movable, reasons
  end

  call_sliced("ZREM", q.source, movable)
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
  return #movable, skipped, movable, reasons
end
