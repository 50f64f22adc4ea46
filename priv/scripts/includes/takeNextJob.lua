--- @include "readyTarget"
--- @include "emitEvent"
--- @include "dedupRelease"

-- Taking the next job, shared by moveToActive and by moveToFinished when it
-- fetches the next job in the same round trip. `q` holds the queue's key
-- names: meta, active, wait, paused, prioritized, pc, marker, events, limiter,
-- delayed, plus `base` (the key prefix `<prefix>:<queue>:`) and `cap` (the
-- events cap). `opts` is the worker's unpacked table: token, lockDuration,
-- name, limiter {max, duration}.
--
-- The answer is always {fields, id, rate_limit_ms, next_delayed_due_ms}:
--   {HGETALL of the job, id, 0, 0}   a job was taken and locked
--   {0, 0, ttl, 0}                   rate limited for ttl ms
--   {0, 0, 0, due}                   nothing ready; due = next delayed (0: none)

-- Delayed jobs whose time has come become ready (at most 1000 per call so one
-- call stays short; the next call takes the rest). Each gets a `waiting`
-- event with prev = delayed and its delay reset to 0.
local function promote_due_delayed(q, now)
  local due = redis.call("ZRANGEBYSCORE", q.delayed, 0, (now + 1) * 4096 - 1, "LIMIT", 0, 1000)
  if #due == 0 then
    return
  end
  redis.call("ZREM", q.delayed, unpack(due))
  for _, job_id in ipairs(due) do
    local job_key = q.base .. job_id
    -- An id whose hash is gone is only dropped: nothing could run it.
    if redis.call("EXISTS", job_key) == 1 then
      local priority = tonumber(redis.call("HGET", job_key, "priority")) or 0
      push_ready(q, job_id, priority, false)
      redis.call("HSET", job_key, "delay", 0)
      emit_event(q.events, q.cap, "waiting", "jobId", job_id, "prev", "delayed")
    end
  end
end

-- A queue-wide limit (meta max + duration) wins over the worker's own.
local function limiter_settings(meta_key, opts)
  local meta = redis.call("HMGET", meta_key, "max", "duration")
  local max, duration = tonumber(meta[1]), tonumber(meta[2])
  if not max and type(opts.limiter) == "table" then
    max, duration = tonumber(opts.limiter.max), tonumber(opts.limiter.duration)
  end
  if not max or not duration or max < 1 or duration < 1 then
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

-- Pop the next id onto the head of `active`: everything in wait runs before
-- anything prioritized. Legacy "0:" markers some old writers left in wait are
-- skipped and removed. The priority counter is dropped once prioritized is empty.
local function pop_ready(q)
  while true do
    local job_id = redis.call("RPOPLPUSH", q.wait, q.active)
    if not job_id then
      break
    end
    if string.sub(job_id, 1, 2) ~= "0:" then
      return job_id
    end
    redis.call("LREM", q.active, 1, job_id)
  end
  local popped = redis.call("ZPOPMIN", q.prioritized)
  if popped[1] then
    redis.call("LPUSH", q.active, popped[1])
    return popped[1]
  end
  redis.call("DEL", q.pc)
  return nil
end

-- A job carrying a deferred failure (`defa`, e.g. stalled too often) is not
-- run: it goes straight to failed with that reason.
local function fail_deferred(q, job_id, job_key, reason, now)
  redis.call("LREM", q.active, 1, job_id)
  redis.call("HINCRBY", job_key, "atm", 1)
  redis.call("HSET", job_key, "failedReason", reason, "finishedOn", now)
  redis.call("HDEL", job_key, "defa")
  redis.call("ZADD", q.base .. "failed", now, job_id)
  release_dedup_key(q.base, job_key, job_id)
  emit_event(q.events, q.cap, "failed", "jobId", job_id, "failedReason", reason, "prev", "waiting")
end

local function start_job(q, job_id, job_key, opts, now, max, duration)
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
  return {redis.call("HGETALL", job_key), job_id, 0, 0}
end

local function take_next_job(q, opts, now)
  local _, may_take = ready_list(q)
  promote_due_delayed(q, now)
  local max, duration = limiter_settings(q.meta, opts)
  local ttl = rate_limit_ttl(q.limiter, max)
  if ttl > 0 then
    return {0, 0, ttl, 0}
  end
  -- Paused, or the queue already runs its global concurrency.
  if not may_take then
    return {0, 0, 0, 0}
  end
  while true do
    local job_id = pop_ready(q)
    if not job_id then
      break
    end
    local job_key = q.base .. job_id
    if redis.call("EXISTS", job_key) == 0 then
      -- An orphan id (its hash was deleted behind our back): drop it.
      redis.call("LREM", q.active, 1, job_id)
    else
      local deferred = redis.call("HGET", job_key, "defa")
      if deferred then
        fail_deferred(q, job_id, job_key, deferred, now)
      else
        return start_job(q, job_id, job_key, opts, now, max, duration)
      end
    end
  end
  return {0, 0, 0, next_delayed_due(q.delayed) or 0}
end
