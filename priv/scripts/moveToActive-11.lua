#!lua
--[[ moveToActive: a worker takes the next job and locks it.

  KEYS[1]  wait          (list)
  KEYS[2]  active        (list)
  KEYS[3]  prioritized   (zset)
  KEYS[4]  events        (stream)
  KEYS[5]  stalled       (set; part of the fixed arity, not touched here)
  KEYS[6]  limiter       (string)
  KEYS[7]  delayed       (zset)
  KEYS[8]  paused        (list)
  KEYS[9]  meta          (hash)
  KEYS[10] pc            (priority counter)
  KEYS[11] marker        (zset)

  ARGV[1]  key prefix "<prefix>:<queue>:" (per-job keys are derived from it)
  ARGV[2]  now (ms)
  ARGV[3]  msgpack {token, lockDuration, name?, limiter? {max, duration}}
           token "0" = take the job without a lock

  Returns {fields, id, rate_limit_ms, next_delayed_due_ms, broken}:
    {HGETALL of the job, job id, 0, 0, broken}   the job, now active and locked
    {0, 0, ttl, 0, broken}               rate limited: ttl ms left in the window
    {0, 0, 0, 0, broken}                 paused / at global concurrency / nothing at all
    {0, 0, 0, due, broken}               nothing ready; the next delayed job is due at `due`
  broken: the jobs met on the way whose keys are broken, as a flat list id,
  reason, id, reason ... (reasons: includes/jobRead.lua): ids without a hash
  ("missing") were dropped, nothing could run them; the others were left
  where they were.
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

--- @include "takeNextJob"

local queue = {
  wait = KEYS[1], active = KEYS[2], prioritized = KEYS[3], events = KEYS[4],
  limiter = KEYS[6], delayed = KEYS[7], paused = KEYS[8], meta = KEYS[9],
  pc = KEYS[10], marker = KEYS[11], base = ARGV[1],
}
local opts, now = cmsgpack.unpack(ARGV[3]), tonumber(ARGV[2])
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
