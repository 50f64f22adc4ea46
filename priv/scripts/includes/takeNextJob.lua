--- @include "numbers"
--- @include "wrongType"
--- @include "jobRead"
--- @include "emitEvent"
--- @include "wakeWorkers"

-- Taking the next job, shared by moveToActive and by moveToFinished when it
-- fetches the next job in the same round trip. `q` holds the queue's key
-- names: meta, active, wait, paused, prioritized, pc, marker, events, limiter,
-- delayed, plus `base` (the key prefix `<prefix>:<queue>:`) and `cap` (the
-- events cap). `opts` is the worker's unpacked table: token, lockDuration,
-- name, limiter {max, duration}.
--
-- In two steps, so that a caller's checks all run before its first write:
-- plan_pickup only reads, before the caller writes anything, and each of its
-- reads proves the type of the key it reads (wrongType.lua); take_planned
-- then writes; the events stream is the caller's to prove (it emits too).
-- The common case (a sound job at the tail of wait, or the
-- first of prioritized, nothing delayed due) is planned in full by those
-- reads. Anything else (due delayed jobs to promote, a broken job or a
-- deferred failure on the way, a flow parent the caller's finish may make
-- ready) takes the general path, whose every key is probed up front
-- (pickup_structures) and which looks at each job only as it goes.
--
-- The answer is always {fields, id, rate_limit_ms, next_delayed_due_ms, broken}:
--   {HGETALL of the job, id, 0, 0, broken}   a job was taken and locked
--   {0, 0, ttl, 0, broken}                   rate limited for ttl ms
--   {0, 0, 0, due, broken}                   nothing ready; due = the next
--                                            delayed job's due time (0: none)
-- broken lists the jobs met on the way whose keys are broken, as id, reason
-- pairs (reasons: jobRead.lua): ids without a hash ("missing") were dropped,
-- nothing could run them; the others were left where they were.

-- A counter one up, as the text HSET stores: what HINCRBY would make of
-- `stored` (integer text or false), nil from 2^53 either way, where a Lua
-- number may no longer be the text's (-(2^53 + 1) reads as -2^53) and the
-- caller leaves the sum to HINCRBY.
local function one_more(stored)
  local count = tonumber(stored or 0)
  if count >= 2 ^ 53 or count <= -2 ^ 53 then
    return nil
  end
  return string.format("%d", count + 1)
end

-- The job just moved onto active starts: the limiter counts it, it is
-- locked, announced and stamped with `now` (ms, best as the text the
-- caller was given: Redis formats a Lua number with snprintf), and its
-- fields are the answer. `started`
-- is its `ats` one up (nil: leave the sum to HINCRBY); `wake`, whether to
-- leave the wake-up marker for the other workers (taking a job may have
-- consumed it while more are ready).
local function start_job(q, job_id, opts, now, max, duration, started, wake)
  local job_key = q.base .. job_id
  if max and redis.call("INCR", q.limiter) == 1 then
    redis.call("PEXPIRE", q.limiter, duration)
  end
  if opts.token ~= "0" then
    redis.call("SET", job_key .. ":lock", opts.token, "PX", math.floor(tonumber(opts.lockDuration)))
  end
  emit_event(q.events, q.cap, "active", "jobId", job_id, "prev", "waiting")
  local stamp = {"processedOn", now}
  if opts.name and opts.name ~= "" then
    stamp[3] = "pb"
    stamp[4] = opts.name
  end
  if started then
    stamp[#stamp + 1] = "ats"
    stamp[#stamp + 1] = started
  end
  redis.call("HSET", job_key, unpack(stamp))
  if not started then
    redis.call("HINCRBY", job_key, "ats", "1")
  end
  if wake then
    wake_workers(q.marker)
  end
  return redis.call("HGETALL", job_key)
end

-- The rare paths' steps: the general pick-up, the probes it needs, a flow
-- parent's release, a deduplication key's release. A script pays on every call for each function it
-- defines, and the common job needs none of these, so they are defined
-- inside this function, on the first call that needs them. (An include
-- inside a function defines its functions there; each fragment is inlined
-- once per script, so a script including this file includes nothing after
-- it that these fragments include.)
local rare_steps = nil
local function rare()
  if not rare_steps then
    rare_steps = (function()
      --- @include "pickupGeneral"
      return {
        pickup_structures = pickup_structures, structure_refusal = structure_refusal,
        take_next_job = take_next_job, parent_of = parent_of,
        child_completed = child_completed, child_failed = child_failed,
        child_removed = child_removed, release_dedup_id = release_dedup_id,
      }
    end)()
  end
  return rare_steps
end

-- Reads only: what take_planned will do, or nil and the refusal to return
-- when one of the keys it reads holds another type. `leaving` jobs (the
-- caller's finish) leave active before the pick-up; `general` asks for the
-- general path (the caller's finish may make a flow parent ready), and so
-- does a candidate that is `finishing` (an id in two states: the caller's
-- finish may delete its hash before the pick-up looks at it).
--
-- Meta is read once for all of it: paused, the global concurrency (a value
-- that is not a number sets no limit), the rate limit (the queue's wins
-- over the worker's own; one that is not a usable number is no limit), the
-- events cap (plan.cap). Besides what a plan names, the reads prove wait
-- (and prioritized whenever wait holds fewer than two jobs), so a caller
-- reading them afterwards need not probe them.
local function plan_pickup(q, opts, now, leaving, general, finishing)
  local meta, wrong = call_typed("hash", q.meta, "HMGET",
    "paused", "concurrency", "max", "duration", "opts.maxLenEvents")
  if wrong then
    return nil, wrong
  end
  -- The plan is a table built once, at the end: filling it field by field
  -- makes Lua grow it again and again, on every call.
  local cap = cap_of(meta[5])
  local max, duration = as_number(meta[3]), as_number(meta[4])
  if not max and type(opts.limiter) == "table" then
    max, duration = as_number(opts.limiter.max), as_number(opts.limiter.duration)
  end
  -- PEXPIRE takes an integer: the duration is one, and no larger than 2^53.
  if not (max and duration and max >= 1 and duration >= 1 and duration <= 2 ^ 53) then
    max, duration = nil, nil
  else
    duration = math.floor(duration)
  end
  local concurrency = as_number(meta[2])
  local may_take = not meta[1]
  -- A caller with a job leaving has proven active (it removes it first);
  -- otherwise the pick-up's first write would be the first to touch it.
  if leaving == 0 or (may_take and concurrency) then
    local active, wrong_active = call_typed("list", q.active, "LLEN")
    if wrong_active then
      return nil, wrong_active
    end
    may_take = may_take and (not concurrency or active - leaving < concurrency)
  end

  local due, wrong_delayed = call_typed("zset", q.delayed, "ZRANGEBYSCORE", "0",
    (now + 1) * 4096 - 1, "LIMIT", "0", "1")
  if wrong_delayed then
    return nil, wrong_delayed
  end
  local tail, wrong_wait = call_typed("list", q.wait, "LRANGE", "-2", "-1")
  if wrong_wait then
    return nil, wrong_wait
  end
  local head = tail
  if #tail < 2 then
    local wrong_prioritized
    head, wrong_prioritized = call_typed("zset", q.prioritized, "ZRANGE", "0", "1")
    if wrong_prioritized then
      return nil, wrong_prioritized
    end
  end
  local job_id = tail[#tail] or head[1]
  local fields = nil
  if job_id and may_take and not general and #due == 0
      and string.sub(job_id, 1, 2) ~= "0:" and job_id ~= finishing then
    -- Name and timestamp (every job has one), the counters the start
    -- increments, the deferred failure.
    local _
    _, fields = read_job(q.base .. job_id, 2, 4, "name", "timestamp", "ats", "atm", "defa")
  end
  if general or #due > 0 or (job_id and may_take and (not fields or fields[5])) then
    local steps = rare()
    local refusal = steps.structure_refusal(steps.pickup_structures(q))
    if refusal then
      return nil, refusal
    end
    return {general = true, cap = cap, max = max, duration = duration, may_take = may_take,
      may_wake = leaving == 0}
  end

  local reset_limiter = false
  if max then
    local used, wrong_limiter = call_typed("counter", q.limiter, "GET")
    if wrong_limiter then
      return nil, wrong_limiter
    end
    if used and not is_integer_text(used) then
      return nil, wrong_type_reply(q.limiter, "string that is not an integer", "counter")
    end
    if (tonumber(used) or 0) >= max then
      local ttl = redis.call("PTTL", q.limiter)
      if ttl > 0 then
        return {cap = cap, reply = {0, 0, ttl, 0, {}}}
      end
      -- Expiring right now, or a counter left without expiry: a new window.
      reset_limiter = true
    end
  end
  if not may_take then
    return {cap = cap, reset_limiter = reset_limiter, reply = {0, 0, 0, 0, {}}}
  end
  if not job_id then
    return {cap = cap, reset_limiter = reset_limiter, drop_pc = true,
      reply = {0, 0, 0, next_delayed_due(q.delayed, now) or 0, {}}}
  end
  -- Another job stays ready after this one (at most two were read, from the
  -- tail of wait, then from the head of prioritized): a pick-up leaves the
  -- wake-up marker for the other workers, unless it is there, as the
  -- marker that woke its worker may be the one it consumed. A finish
  -- consumed none, and leaves it as it was.
  local wake = false
  if leaving == 0 and #tail + (head == tail and 0 or #head) > 1 then
    local marked, wrong_marker = call_typed("zset", q.marker, "ZSCORE", "0")
    if wrong_marker then
      return nil, wrong_marker
    end
    wake = not marked
  end
  return {cap = cap, reset_limiter = reset_limiter, max = max, duration = duration, id = job_id,
    from_wait = #tail > 0, started = one_more(fields[3]), wake = wake}
end

-- The writes of a plan (see plan_pickup), after the caller's own. `now_text`
-- is `now` as the caller was given it.
local function take_planned(q, plan, opts, now, now_text)
  if plan.general then
    return rare().take_next_job(q, opts, now, plan)
  end
  if plan.reset_limiter then
    redis.call("DEL", q.limiter)
  end
  if plan.drop_pc then
    redis.call("DEL", q.pc)
  end
  if plan.reply then
    return plan.reply
  end
  local job_id = plan.id
  if plan.from_wait then
    redis.call("RPOPLPUSH", q.wait, q.active)
  else
    redis.call("ZREM", q.prioritized, job_id)
    redis.call("LPUSH", q.active, job_id)
  end
  local fields = start_job(q, job_id, opts, now_text, plan.max, plan.duration, plan.started,
    plan.wake)
  return {fields, job_id, 0, 0, {}}
end
