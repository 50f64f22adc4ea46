--- @include "emitEvent"
--- @include "jobFields"
--- @include "removeJobKeys"

-- The steps every finish takes once the job has left active (its first
-- write), shared by moveToFinished-1.lua's straight-line path and by its
-- general path (includes/finishGeneral.lua) so that each is written once.
-- They read the finish's own arguments as moveToFinished-1.lua's header
-- gives them (ARGV[2] id, ARGV[3] now, ARGV[4] target, ARGV[5] value,
-- ARGV[6] token, ARGV[7] keep, ARGV[8] attempts allowed, ARGV[12] extra
-- fields): both paths finish the same call, and an argument read here is
-- one the caller need not pass along.

-- The job's own writes: its lock and stalled mark go (`stalled_mark` is
-- SISMEMBER's answer, so SREM runs only for a marked job), the worker's
-- extra fields are set, and the job is deleted with all its keys (keep
-- "0") or given its outcome: the result field, when it finished and the
-- attempt counted, in one HSET. `attempts` is that count as text, or nil
-- past 2^53, where a Lua number is no longer exact and HINCRBY counts.
-- Answers the attempts made.
local function settle_finished_job(job_key, stalled_key, stalled_mark, attempts)
  local target, keep = ARGV[4], ARGV[7]
  if ARGV[6] ~= "0" and keep ~= "0" then
    redis.call("DEL", job_key .. ":lock")  -- remove_job_keys takes it otherwise
  end
  if stalled_mark == 1 then
    redis.call("SREM", stalled_key, ARGV[2])
  end
  set_packed_fields(job_key, ARGV[12])
  local field = target == "completed" and "returnvalue" or "failedReason"
  if not attempts then
    attempts = redis.call("HINCRBY", job_key, "atm", "1")
    if keep ~= "0" then
      redis.call("HSET", job_key, field, ARGV[5], "finishedOn", ARGV[3])
    end
  elseif keep ~= "0" then
    redis.call("HSET", job_key, field, ARGV[5], "finishedOn", ARGV[3], "atm", attempts)
  end
  if keep == "0" then
    remove_job_keys(job_key)
  elseif target == "failed" then
    redis.call("HDEL", job_key, "defa")  -- a deferred failure is carried out
  end
  return attempts
end

-- The finish's events: completed (returnvalue) or failed (failedReason),
-- and retries-exhausted when a failure used the last attempt allowed.
local function announce_finish(events, cap, attempts)
  local target, job_id = ARGV[4], ARGV[2]
  local field = target == "completed" and "returnvalue" or "failedReason"
  emit_event(events, cap, target, "jobId", job_id, field, ARGV[5], "prev", "active")
  if target == "failed" and tonumber(attempts) >= (tonumber(ARGV[8]) or 1) then
    emit_event(events, cap, "retries-exhausted", "jobId", job_id, "attemptsMade", attempts)
  end
end
