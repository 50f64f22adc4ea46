--- @include "readyTarget"
--- @include "dedupRelease"
--- @include "structureCheck"
--- @include "jobCheck"
--- @include "parentRelease"

-- The general path of taking the next job (see takeNextJob.lua, which
-- includes this file inside a function so that only a call taking this path
-- defines it): it promotes due delayed jobs, passes over broken jobs and
-- carries out deferred failures, looking at each job only as it goes, so
-- the caller probes every key it may write up front (pickup_structures).

-- What the general path may write, for structure_refusal. A job carrying a
-- deferred failure goes to `failed`, derived from the key prefix (the
-- transitions' KEYS are fixed by the protocol; it shares their slot).
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

-- The general path, after plan_pickup (takeNextJob.lua) has read the
-- queue's settings and checked pickup_structures(q), before the caller's
-- first write.
local function take_next_job(q, opts, now, plan)
  local broken = {}
  local max, duration = plan.max, plan.duration
  promote_due_delayed(q, now, broken)
  local ttl = rate_limit_ttl(q.limiter, max)
  if ttl > 0 then
    return {0, 0, ttl, 0, broken}
  end
  -- Paused, or the queue already runs its global concurrency.
  if not plan.may_take then
    return {0, 0, 0, 0, broken}
  end
  local check, at = job_checker({}, {"ats", "atm"}, {"defa"})
  while true do
    local job_id, fields = next_ready(q, check, broken)
    if not job_id then
      break
    end
    local deferred = fields[at.defa]
    if deferred then
      fail_deferred(q, job_id, q.base .. job_id, deferred, now)
    else
      local wake = plan.may_wake
        and (redis.call("LLEN", q.wait) > 0 or redis.call("ZCARD", q.prioritized) > 0)
      local fields_now = start_job(q, job_id, opts, now, max, duration, nil, wake)
      return {fields_now, job_id, 0, 0, broken}
    end
  end
  -- Only a job due later counts: one still delayed although due was left
  -- there because its keys are broken, and must not wake the worker at once.
  return {0, 0, 0, next_delayed_due(q.delayed, now) or 0, broken}
end
