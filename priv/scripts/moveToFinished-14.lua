#!lua
--[[ moveToFinished: a worker ends an attempt, completed or failed, and may
  take its next job in the same round trip.

  KEYS[1]  wait          (list)
  KEYS[2]  active        (list)
  KEYS[3]  prioritized   (zset)
  KEYS[4]  events        (stream)
  KEYS[5]  stalled       (set)
  KEYS[6]  limiter       (string)
  KEYS[7]  delayed       (zset)
  KEYS[8]  paused        (list)
  KEYS[9]  meta          (hash)
  KEYS[10] pc            (priority counter)
  KEYS[11] completed or failed (zset, score = finishedOn)
  KEYS[12] job key "<prefix>:<queue>:<id>" (hash)
  KEYS[13] metrics key of the target "<prefix>:<queue>:metrics:<target>"
           (hash; its data list is KEYS[13] .. ":data")
  KEYS[14] marker        (zset)

  ARGV[1]  job id
  ARGV[2]  now (ms)
  ARGV[3]  field to set: "returnvalue" or "failedReason"
  ARGV[4]  its value (return value as JSON, or the failure reason)
  ARGV[5]  target: "completed" or "failed"
  ARGV[6]  fetch next: "1" to take the next job, else "0"
  ARGV[7]  key prefix "<prefix>:<queue>:"
  ARGV[8]  msgpack {token, lockDuration, name?, limiter?, attempts,
           keepJobs {count, age?, limit?}, maxMetricsSize, fpof?, cpof?, idof?, rdof?}
           keepJobs.count: 0 delete the job, N > 0 keep the newest N,
           -1 keep all; age (s): delete jobs finished longer ago, at most
           `limit` (default 1000) per call.
  ARGV[9]  optional msgpack array {field, value, ...} to set (e.g. stacktrace)

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

--- @include "lockStatus"
--- @include "jobFields"
--- @include "finishMetrics"
--- @include "removeJobKeys"
--- @include "takeNextJob"

local queue = {
  wait = KEYS[1], active = KEYS[2], prioritized = KEYS[3], events = KEYS[4],
  limiter = KEYS[6], delayed = KEYS[7], paused = KEYS[8], meta = KEYS[9],
  pc = KEYS[10], marker = KEYS[14], base = ARGV[7],
}
local stalled_key, finished_key, job_key, metrics_key = KEYS[5], KEYS[11], KEYS[12], KEYS[13]
local job_id, now, now_text = ARGV[1], tonumber(ARGV[2]), ARGV[2]
local field, value, target = ARGV[3], ARGV[4], ARGV[5]
local fetch_next = ARGV[6] == "1"
local opts = cmsgpack.unpack(ARGV[8])
local record_points = tonumber(opts.maxMetricsSize) or 0
local keep = type(opts.keepJobs) == "table" and opts.keepJobs or {}
local keep_count = tonumber(keep.count) or -1
local keep_age = tonumber(keep.age)
local keep_limit = tonumber(keep.limit) or 1000

-- Reads first. Each answers a question the finish asks anyway and proves
-- the type of the key it reads (wrongType.lua); a key written later that no
-- read proves is probed. So every refusal comes before the first write.
local problem, job = read_job(job_key, 2, 3, "name", "timestamp", "atm", "parentKey", "parent",
  "deid")
if problem == "missing" then
  return -1
elseif problem then
  return broken_reply(problem)
end
local children, failed_children = job_key .. ":dependencies", job_key .. ":unsuccessful"
if target == "completed" and redis.call("EXISTS", children, failed_children) > 0 then
  -- pcall: a children key of another type is the job's breakage, not a crash.
  local pending = redis.pcall("SCARD", children)
  if type(pending) == "table" then
    return broken_reply("key:dependencies")
  end
  if pending > 0 then
    return -4
  end
  local failed_count = redis.pcall("ZCARD", failed_children)
  if type(failed_count) == "table" then
    return broken_reply("key:unsuccessful")
  end
  if failed_count > 0 then
    return -9
  end
end
local lock_refused = lock_status(job_key, opts.token)
if lock_refused ~= 0 then
  return lock_refused
end
local stalled_mark, wrong_stalled = call_typed("set", stalled_key, "SISMEMBER", job_id)
if wrong_stalled then
  return wrong_stalled
end
local has_parent = (job[4] and job[4] ~= "") or job[5]
local pickup = nil
if fetch_next then
  local wrong_pickup
  pickup, wrong_pickup = plan_pickup(queue, opts, now, 1, has_parent, job_id)
  if wrong_pickup then
    return wrong_pickup
  end
  queue.cap = pickup.cap
else
  local stored, wrong_meta = call_typed("hash", queue.meta, "HGET", "opts.maxLenEvents")
  if wrong_meta then
    return wrong_meta
  end
  queue.cap = cap_of(stored)
end
-- The keys written below that no read above proves, each by a read of its
-- type: the events the finish emits, the finished set when the job stays,
-- metrics when recorded, and, when no job is taken, what the drained check
-- reads (plan_pickup proves them otherwise).
local _, wrong = call_typed("stream", queue.events, "XLEN")
if not wrong and keep_count ~= 0 then
  _, wrong = call_typed("zset", finished_key, "ZCARD")
end
if not wrong and record_points > 0 then
  _, wrong = call_typed("hash", metrics_key, "HLEN")
  if not wrong then
    _, wrong = call_typed("list", metrics_key .. ":data", "LLEN")
  end
end
if not wrong and not fetch_next then
  _, wrong = call_typed("list", queue.wait, "LLEN")
  if not wrong then
    _, wrong = call_typed("zset", queue.prioritized, "ZCARD")
  end
end
if wrong then
  return wrong
end

-- The first write: a job that is not active (-3) leaves everything as it was.
local removed, wrong_active = call_typed("list", queue.active, "LREM", "-1", job_id)
if wrong_active then
  return wrong_active
end
if removed == 0 then
  return -3
end
if opts.token ~= "0" and keep_count ~= 0 then
  redis.call("DEL", job_key .. ":lock")  -- remove_job_keys takes it otherwise
end
if stalled_mark == 1 then
  redis.call("SREM", stalled_key, job_id)
end
set_packed_fields(job_key, ARGV[9])
if job[6] then
  rare().release_dedup_id(queue.base, job[6], job_id)
end

local flows = has_parent and rare()
local parent = flows and flows.parent_of(job_key)
if parent then
  if target == "completed" then
    flows.child_completed(parent, job_key, value, now)
  else
    flows.child_failed(parent, job_key, value, now, opts)
  end
end

-- The attempt counted from the value read (one HSET with the result),
-- except past 2^53, where only Redis counts exactly.
local finish_fields = {field, value, "finishedOn", now_text}
local attempts = one_more(job[3])
if attempts then
  finish_fields[5] = "atm"
  finish_fields[6] = attempts
else
  attempts = redis.call("HINCRBY", job_key, "atm", "1")
end
if keep_count == 0 then
  remove_job_keys(job_key)
  if parent then
    flows.child_removed(parent, job_key, now)
  end
else
  redis.call("HSET", job_key, unpack(finish_fields))
  if target == "failed" then
    redis.call("HDEL", job_key, "defa")
  end
  redis.call("ZADD", finished_key, now_text, job_id)
  -- Removes finished jobs (and all their keys) from the target set.
  local function remove_finished(ids)
    if #ids == 0 then
      return
    end
    for _, id in ipairs(ids) do
      remove_job_keys(queue.base .. id)
    end
    redis.call("ZREM", finished_key, unpack(ids))
  end
  if keep_age then
    -- Strictly older than `age` seconds; formatted by hand because Lua's
    -- number to string conversion would print large scores as 1.7e+12.
    local cutoff = string.format("(%d", math.floor(now - keep_age * 1000))
    remove_finished(redis.call("ZRANGEBYSCORE", finished_key, "-inf", cutoff,
      "LIMIT", 0, keep_limit))
  end
  if keep_count > 0 then
    -- Oldest first, bounded like the age rule so that lowering the count on
    -- a huge set cannot block Redis in one call.
    local excess = redis.call("ZCARD", finished_key) - keep_count
    if excess > 0 then
      remove_finished(redis.call("ZRANGE", finished_key, 0, math.min(excess, keep_limit) - 1))
    end
  end
end

emit_event(queue.events, queue.cap, target, "jobId", job_id, field, value, "prev", "active")
if target == "failed" and tonumber(attempts) >= (tonumber(opts.attempts) or 1) then
  emit_event(queue.events, queue.cap, "retries-exhausted", "jobId", job_id,
    "attemptsMade", attempts)
end

if record_points > 0 then
  record_metrics(metrics_key, record_points, now)
end

local reply = 0
if fetch_next then
  reply = take_planned(queue, pickup, opts, now, now_text)
  if reply[2] ~= 0 then
    return reply
  end
end
if redis.call("LLEN", queue.wait) == 0 and redis.call("LLEN", queue.active) == 0
    and redis.call("ZCARD", queue.prioritized) == 0 then
  emit_event(queue.events, queue.cap, "drained")
end
return reply
