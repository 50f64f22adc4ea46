--- @include "readyTarget"
--- @include "emitEvent"
--- @include "dedupRelease"
--- @include "keyCheck"
--- @include "parentRelease"

-- Taking the next job, shared by moveToActive and by moveToFinished when it
-- fetches the next job in the same round trip. `q` holds the queue's key
-- names: meta, active, wait, paused, prioritized, pc, marker, events, limiter,
-- delayed, plus `base` (the key prefix `<prefix>:<queue>:`) and `cap` (the
-- events cap). `opts` is the worker's unpacked table: token, lockDuration,
-- name, limiter {max, duration}.
--
-- The answer is always {fields, id, rate_limit_ms, next_delayed_due_ms, broken}:
--   {HGETALL of the job, id, 0, 0, broken}   a job was taken and locked
--   {0, 0, ttl, 0, broken}                   rate limited for ttl ms
--   {0, 0, 0, due, broken}                   nothing ready; due = the next
--                                            delayed job's due time (0: none)
-- broken lists the jobs met on the way whose keys are broken, as id, reason
-- pairs (reasons: keyCheck.lua): ids without a hash ("missing") were dropped,
-- nothing could run them; the others were left where they were.

-- What taking a job may write, for the callers' structure_refusal. A job
-- carrying a deferred failure goes to `failed`, derived from the key prefix
-- (the transitions' KEYS are fixed by the protocol; it shares their slot).
local function pickup_structures(q)
  return {
    q.wait, "list", q.active, "list", q.paused, "list", q.prioritized, "zset",
    q.delayed, "zset", q.marker, "zset", q.events, "stream", q.meta, "hash",
    q.limiter, "counter", q.pc, "counter", q.base .. "failed", "zset",
  }
end

local function report_broken(broken, job_id, reason)
  broken[#broken + 1] = job_id
  broken[#broken + 1] = reason
end

-- Delayed jobs whose time has come become ready (at most 1000 per call so one
-- call stays short; the next call takes the rest). Each gets a `waiting`
-- event with prev = delayed and its delay reset to 0. An id whose hash is
-- gone is only dropped (and reported): nothing could run it. A job whose
-- keys are broken stays delayed and is reported.
local function promote_due_delayed(q, now, broken)
  local due = redis.call("ZRANGEBYSCORE", q.delayed, 0, (now + 1) * 4096 - 1, "LIMIT", 0, 1000)
  if #due == 0 then
    return
  end
  local check, at = job_checker({"priority"}, {})
  local taken, ready, priorities = {}, {}, {}
  for _, job_id in ipairs(due) do
    local problem, fields = check(q.base .. job_id)
    if problem == "missing" then
      taken[#taken + 1] = job_id
      report_broken(broken, job_id, problem)
    elseif problem then
      report_broken(broken, job_id, problem)
    else
      taken[#taken + 1] = job_id
      ready[#ready + 1] = job_id
      priorities[#ready] = as_number(fields[at.priority]) or 0
    end
  end
  if #taken == 0 then
    return
  end
  redis.call("ZREM", q.delayed, unpack(taken))
  for index, job_id in ipairs(ready) do
    push_ready(q, job_id, priorities[index], false)
    redis.call("HSET", q.base .. job_id, "delay", 0)
    emit_event(q.events, q.cap, "waiting", "jobId", job_id, "prev", "delayed")
  end
end

-- A queue-wide limit (meta max + duration) wins over the worker's own. A
-- limit that is not a usable number (another writer's garbage) is no limit.
local function limiter_settings(meta_key, opts)
  local meta = redis.call("HMGET", meta_key, "max", "duration")
  local max, duration = as_number(meta[1]), as_number(meta[2])
  if not max and type(opts.limiter) == "table" then
    max, duration = as_number(opts.limiter.max), as_number(opts.limiter.duration)
  end
  -- PEXPIRE takes an integer; a double this large would not print as one.
  if not max or not duration or max < 1 or duration < 1 or duration > 2 ^ 53 then
    return nil, nil
  end
  return max, math.floor(duration)
end

-- Milliseconds until the current window ends when it is used up, else 0.
local function rate_limit_ttl(limiter_key, max)
  if not max or (tonumber(redis.call("GET", limiter_key)) or 0) < max then
    return 0
  end
  local ttl = redis.call("PTTL", limiter_key)
  if ttl > 0 then
    return ttl
  end
  -- Expiring right now, or a counter left without expiry: open a new window
  -- instead of blocking the queue forever.
  redis.call("DEL", limiter_key)
  return 0
end

-- The next job to run, moved onto the head of `active`, and its checked
-- fields; nil when none is ready. Everything in wait runs before anything
-- prioritized. Each candidate is looked at before it moves: legacy "0:"
-- markers some old writers left in wait and ids whose hash is gone are
-- dropped; a job whose keys are broken is reported and stays where it is:
-- in wait it goes to the head, so the jobs behind it still run, and each
-- broken job is passed over once per call; in prioritized it keeps its
-- score. The priority counter is dropped once prioritized is empty.
local function next_ready(q, check, broken)
  local rotations_left = nil
  while true do
    local job_id = redis.call("LINDEX", q.wait, -1)
    if not job_id then
      break
    end
    local problem, fields = "missing", nil
    if string.sub(job_id, 1, 2) ~= "0:" then
      problem, fields = check(q.base .. job_id)
    end
    if not problem then
      redis.call("RPOPLPUSH", q.wait, q.active)
      return job_id, fields
    end
    if problem == "missing" then
      redis.call("RPOP", q.wait)
      if string.sub(job_id, 1, 2) ~= "0:" then
        report_broken(broken, job_id, problem)
      end
    else
      rotations_left = (rotations_left or redis.call("LLEN", q.wait)) - 1
      report_broken(broken, job_id, problem)
      redis.call("RPOPLPUSH", q.wait, q.wait)
      if rotations_left <= 0 then
        break
      end
    end
  end

  local start, chunk_size = 0, 100
  local orphans, chosen, chosen_fields = {}, nil, nil
  while not chosen do
    local chunk = redis.call("ZRANGE", q.prioritized, start, start + chunk_size - 1)
    for _, job_id in ipairs(chunk) do
      local problem, fields = check(q.base .. job_id)
      if problem == "missing" then
        orphans[#orphans + 1] = job_id
        report_broken(broken, job_id, problem)
      elseif problem then
        report_broken(broken, job_id, problem)
      else
        chosen, chosen_fields = job_id, fields
        break
      end
    end
    if #chunk < chunk_size then
      break
    end
    start = start + chunk_size
  end
  if #orphans > 0 then
    redis.call("ZREM", q.prioritized, unpack(orphans))
  end
  if chosen then
    redis.call("ZREM", q.prioritized, chosen)
    redis.call("LPUSH", q.active, chosen)
    return chosen, chosen_fields
  end
  if redis.call("ZCARD", q.prioritized) == 0 then
    redis.call("DEL", q.pc)
  end
  return nil, nil
end

-- A job carrying a deferred failure (`defa`, e.g. stalled too often, or a
-- flow parent whose child failed under fail-parent-on-failure) is not run:
-- it goes straight to failed with that reason, and tells its own parent as
-- any failure does (so a failure climbs a flow as far as the policies say).
local function fail_deferred(q, job_id, job_key, reason, now)
  local parent = parent_of(job_key)
  if parent then
    child_failed(parent, job_key, reason, now, {})
  end
  redis.call("LREM", q.active, 1, job_id)
  redis.call("HINCRBY", job_key, "atm", 1)
  redis.call("HSET", job_key, "failedReason", reason, "finishedOn", now)
  redis.call("HDEL", job_key, "defa")
  redis.call("ZADD", q.base .. "failed", now, job_id)
  release_dedup_key(q.base, job_key, job_id)
  emit_event(q.events, q.cap, "failed", "jobId", job_id, "failedReason", reason, "prev", "waiting")
end

local function start_job(q, job_id, job_key, opts, now, max, duration, broken)
  if max and redis.call("INCR", q.limiter) == 1 then
    redis.call("PEXPIRE", q.limiter, duration)
  end
  if opts.token ~= "0" then
    redis.call("SET", job_key .. ":lock", opts.token, "PX", math.floor(tonumber(opts.lockDuration)))
  end
  emit_event(q.events, q.cap, "active", "jobId", job_id, "prev", "waiting")
  if opts.name and opts.name ~= "" then
    redis.call("HSET", job_key, "processedOn", now, "pb", opts.name)
  else
    redis.call("HSET", job_key, "processedOn", now)
  end
  redis.call("HINCRBY", job_key, "ats", 1)
  -- Taking a job may have consumed the wake-up marker: leave one for the
  -- other workers while more jobs are ready.
  if redis.call("LLEN", q.wait) > 0 or redis.call("ZCARD", q.prioritized) > 0 then
    wake_workers(q.marker)
  end
  return {redis.call("HGETALL", job_key), job_id, 0, 0, broken}
end

-- The caller has checked pickup_structures(q) before its first write.
local function take_next_job(q, opts, now)
  local broken = {}
  local _, may_take = ready_list(q)
  promote_due_delayed(q, now, broken)
  local max, duration = limiter_settings(q.meta, opts)
  local ttl = rate_limit_ttl(q.limiter, max)
  if ttl > 0 then
    return {0, 0, ttl, 0, broken}
  end
  -- Paused, or the queue already runs its global concurrency.
  if not may_take then
    return {0, 0, 0, 0, broken}
  end
  local check, at = job_checker({}, {"ats", "atm"}, {"defa"})
  while true do
    local job_id, fields = next_ready(q, check, broken)
    if not job_id then
      break
    end
    local job_key = q.base .. job_id
    local deferred = fields[at.defa]
    if deferred then
      fail_deferred(q, job_id, job_key, deferred, now)
    else
      return start_job(q, job_id, job_key, opts, now, max, duration, broken)
    end
  end
  -- Only a job due later counts: one still delayed although due was left
  -- there because its keys are broken, and must not wake the worker at once.
  return {0, 0, 0, next_delayed_due(q.delayed, now) or 0, broken}
end
