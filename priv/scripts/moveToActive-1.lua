#!lua
--[[ moveToActive: a worker takes the next job and locks it.

  KEYS[1]  wait (list). The queue's other keys are derived from ARGV[1]
           (the names of queues/keys.py): active, prioritized, events,
           limiter, delayed, paused, meta, pc, marker; they share wait's
           hash slot.

  ARGV[1]  key prefix "<prefix>:<queue>:" (per-job keys are derived from it)
  ARGV[2]  now (ms)
  ARGV[3]  lock token ("0": take the job without a lock)
  ARGV[4]  lock duration in ms (integer text: queues/commands/transitions.py
           checks it)
  ARGV[5]  worker name, stored as the job's `pb` ("": none)
  ARGV[6]  "" or the worker's rate limit, msgpack {max, duration}

  Returns {fields, id, rate_limit_ms, next_delayed_due_ms, broken}:
    {HGETALL of the job, job id, 0, 0, broken}   the job, now active and locked
    {0, 0, ttl, 0, broken}               rate limited: ttl ms left in the window
    {0, 0, 0, 0, broken}                 paused / at global concurrency / nothing at all
    {0, 0, 0, due, broken}               nothing ready; the next delayed job is due at `due`
  broken: the jobs met on the way whose keys are broken, as a flat list id,
  reason, id, reason ... (reasons: includes/jobRead.lua): ids without a hash
  ("missing") were dropped, nothing could run them; the others were left
  where they were. Absent (a 4-element answer) when there are none.
  Refused with a WRONGTYPE error naming the key, nothing changed, when one of
  the keys it may write has the wrong type.

  Memory: refused when Redis is over maxmemory (no allow-oom flag): a full
  Redis starts no new work; the worker tries again a second later.

  Events: waiting (jobId, prev=delayed) per promoted delayed job;
          failed (jobId, failedReason, prev=waiting) per job with a deferred
          failure (`defa`) met on the way, and for such a job in a flow its
          parent's events as moveToFinished's failure gives them (waiting,
          prev=waiting-children, or delayed, in the parent's queue);
          active (jobId, prev=waiting).
]]

--- @include "takeReady"

-- Everything but the common pick-up: the general path (takeNextJob.lua),
-- defined only on a call that takes it.
local function in_general()
  --- @include "takeNextJob"
  local base = ARGV[1]
  local queue = {
    wait = KEYS[1], active = base .. "active", prioritized = base .. "prioritized",
    events = base .. "events", limiter = base .. "limiter", delayed = base .. "delayed",
    paused = base .. "paused", meta = base .. "meta", pc = base .. "pc",
    marker = base .. "marker", base = base,
  }
  local opts = {token = ARGV[3], lockDuration = ARGV[4], name = ARGV[5]}
  if ARGV[6] ~= "" then
    opts.limiter = cmsgpack.unpack(ARGV[6])
  end
  local now = tonumber(ARGV[2])
  local plan, wrong = plan_pickup(queue, opts, now, 0, false, nil)
  if wrong then
    return wrong
  end
  queue.cap = plan.cap
  if plan.id then
    -- The start announces the job (the general path probes every key itself).
    local _, wrong_events = call_typed("stream", queue.events, "XLEN")
    if wrong_events then
      return wrong_events
    end
  end
  return take_planned(queue, plan, opts, now, ARGV[2])
end

-- The common pick-up (includes/takeReady.lua); reads first, each proving
-- the key it reads, and anything else to the general path before the
-- first write.
local base, now_text, token, lock_ms = ARGV[1], ARGV[2], ARGV[3], ARGV[4]
if ARGV[6] ~= "" then
  return in_general()
end
local cap = open_queue_cap(base)
if not cap then
  return in_general()
end
local job_id, fields, from_wait, started, others, due = ready_job(base, now_text, nil)
if job_id == false then
  return in_general()
end
if not job_id then
  redis.call("DEL", base .. "pc")  -- nothing is prioritized: the counter restarts
  return {0, 0, 0, due}
end
-- Written by the start and read by nothing above: the events (active is
-- proven by the start's first write, see start_ready_job).
local active_key, events = base .. "active", base .. "events"
if type(redis.pcall("XLEN", events)) ~= "number" then
  return in_general()
end
-- A worker calls this after the wake-up marker woke it, so taking a job may
-- have consumed the marker while more are ready: leave it for the others.
local wake = false
if others then
  local marked = redis.pcall("ZSCORE", base .. "marker", "0")
  if type(marked) == "table" and marked.err then
    return in_general()
  end
  wake = not marked
end
return start_ready_job(base, active_key, events, job_id, fields, from_wait, started, wake, token,
  lock_ms, ARGV[5], now_text, cap) or in_general()
