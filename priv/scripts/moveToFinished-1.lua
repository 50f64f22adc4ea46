#!lua
--[[ moveToFinished: a worker ends an attempt, completed or failed, and may
  take its next job in the same round trip.

  KEYS[1]  the job's key "<prefix>:<queue>:<id>" (hash). The queue's keys
           are derived from ARGV[1] (the names of queues/keys.py): wait,
           active, prioritized, events, stalled, limiter, delayed, paused,
           meta, pc, marker, completed or failed (the target), and the
           target's metrics "metrics:<target>" (hash; list "...:data").
           They share the job key's hash slot.

  ARGV[1]  key prefix "<prefix>:<queue>:"
  ARGV[2]  job id
  ARGV[3]  now (ms)
  ARGV[4]  target: "completed" (sets returnvalue) or "failed" (failedReason)
  ARGV[5]  the value: the return value as JSON, or the failure reason
  ARGV[6]  lock token ("0": the job is processed without a lock)
  ARGV[7]  keep: "0" delete the job, N > 0 keep the newest N, "-1" keep all
  ARGV[8]  attempts the job may make (a failure using the last one emits
           retries-exhausted)
  ARGV[9]  the next job's lock duration in ms, to take the next job in the
           same call; "0" takes none
           (ARGV[7..9] are integer text: queues/commands/transitions.py
           checks them, and the script passes them to Redis as they are)
  ARGV[10] worker name, stored as the next job's `pb` ("": none)
  ARGV[11] "" or the rarer options, msgpack {age?, limit?, maxMetricsSize?,
           limiter? {max, duration}, fpof?, cpof?, idof?, rdof?}: age (s)
           deletes jobs finished longer ago, at most `limit` (default 1000)
           per call; maxMetricsSize > 0 records per-minute metrics
  ARGV[12] optional msgpack array {field, value, ...} to set (e.g. stacktrace)

  Returns
    without fetch next: 0
    with fetch next: {fields, id, rate_limit_ms, next_delayed_due_ms, broken},
      exactly as moveToActive answers
    or -1 (no such job), -4 (completing a parent with pending children),
    -9 (completing a parent with failed children), -2 (lock gone, e.g. an
    admin failed the job), -6 (lock held by another token or a lock key of
    another type), -3 (not active), {"broken", reason} (the job's keys are
    broken, e.g. `atm` is not an integer; reasons: includes/jobRead.lua).
    Refused with a WRONGTYPE error naming the key when one of the keys it may
    write has the wrong type.
    Every check runs before the first write, so a refused call changes nothing.
    A flow parent whose keys are broken is left alone, as if there were none.

  Memory: refused when Redis is over maxmemory (no allow-oom flag): the
  worker keeps the job and its lock and tries again until Redis has room.

  Events: in the parent's queue, waiting (prev=waiting-children) or delayed
  when the last child finished; completed (jobId, returnvalue, prev=active) or
  failed (jobId, failedReason, prev=active); retries-exhausted (jobId,
  attemptsMade) when a failure used the last attempt; then the events of
  taking the next job (see moveToActive); drained when nothing was taken and
  wait, active and prioritized are all empty.
]]

--- @include "takeReady"
--- @include "finishSteps"

-- Everything but the common finish: the general path, defined only on a
-- call that takes it (includes/finishGeneral.lua).
local function in_general()
  --- @include "finishGeneral"
  return finish_in_general()
end

-- The common finish, in straight-line Lua (why: includes/takeReady.lua):
-- a sound job without flow parent or deduplication id, finished by the
-- worker holding its lock, kept or removed by count, and the next job
-- taken by the common pick-up. Every read comes first, proves the key it
-- reads, and hands anything else to the general path before the first
-- write; the general path then decides (and refuses) as it always has.
local job_key, base, job_id, now_text = KEYS[1], ARGV[1], ARGV[2], ARGV[3]
local target, token, keep, lock_ms = ARGV[4], ARGV[6], ARGV[7], ARGV[9]
if ARGV[11] ~= "" or lock_ms == "0" then
  return in_general()
end
local cap = open_queue_cap(base)
if not cap then
  return in_general()
end
local job = redis.pcall("HMGET", job_key, "timestamp", "atm", "parentKey", "parent", "deid")
if job.err or not job[1] or job[3] or job[4] or job[5] then
  return in_general()
end
-- The attempt counted from the value read, written with the result.
local attempts, made = "1", job[2]
if made then
  if #made > 15 or not (made == "0" or string.find(made, "^%-?[1-9]%d*$")) then
    return in_general()
  end
  attempts = string.format("%d", tonumber(made) + 1)
end
if target == "completed"
    and redis.call("EXISTS", job_key .. ":dependencies", job_key .. ":unsuccessful") > 0 then
  return in_general()
end
if token ~= "0" and redis.pcall("GET", job_key .. ":lock") ~= token then
  return in_general()
end
local stalled_key = base .. "stalled"
local stalled_mark = redis.pcall("SISMEMBER", stalled_key, job_id)
if type(stalled_mark) ~= "number" then
  return in_general()
end
local active_key, events = base .. "active", base .. "events"
local next_id, fields, from_wait, started, _, due = ready_job(base, now_text, job_id)
if next_id == false then
  return in_general()
end
-- Written below and read by nothing above: the events, and the finished
-- set when the job stays (its size is what keeping N needs anyway).
local finished_key = base .. target
if type(redis.pcall("XLEN", events)) ~= "number" then
  return in_general()
end
local finished_count = 0
if keep ~= "0" then
  finished_count = redis.pcall("ZCARD", finished_key)
  if type(finished_count) ~= "number" then
    return in_general()
  end
end

-- The first write, which proves active: a job that is not there (the
-- general path answers -3) leaves everything as it was.
if redis.pcall("LREM", active_key, "-1", job_id) ~= 1 then
  return in_general()
end
settle_finished_job(job_key, stalled_key, stalled_mark, attempts)
if keep ~= "0" then
  local excess = finished_count + redis.call("ZADD", finished_key, now_text, job_id)
    - (tonumber(keep) or 0)
  if keep ~= "-1" and excess > 0 then
    -- Oldest first, at most 1,000 per call so that lowering the count on a
    -- huge set cannot block Redis in one call.
    local oldest = redis.call("ZRANGE", finished_key, "0",
      string.format("%d", math.min(excess, 1000) - 1))
    for _, id in ipairs(oldest) do
      remove_job_keys(base .. id)
    end
    redis.call("ZREM", finished_key, unpack(oldest))
  end
end
announce_finish(events, cap, attempts)

if next_id then
  -- No wake-up marker: a finish consumed none (a pick-up restores the one
  -- it was woken by, and adds leave one), so the other workers' wake-up
  -- stays as it was.
  return start_ready_job(base, active_key, events, next_id, fields, from_wait, started, false,
    token, lock_ms, ARGV[10], now_text, cap)
end
-- Nothing ready (wait and prioritized were read empty): the priority
-- counter restarts, and the queue is drained once active is empty too.
redis.call("DEL", base .. "pc")
if redis.call("LLEN", active_key) == 0 then
  emit_event(events, cap, "drained")
end
return {0, 0, 0, due}
