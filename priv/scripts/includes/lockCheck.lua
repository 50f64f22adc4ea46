--- @include "lockStatus"

-- The job leaves `active`: drop its lock and its mark from the last stalled
-- check (a job no longer active cannot stall).
local function release_lock(job_key, stalled_key, job_id, token)
  if token ~= "0" then
    redis.call("DEL", job_key .. ":lock")
  end
  redis.call("SREM", stalled_key, job_id)
end

-- The job leaves `active` if the caller may move it: 0, or the refusal (-2 /
-- -6 for the lock, -3 when the job is not active) with nothing changed.
local function leave_active(active_key, stalled_key, job_key, job_id, token)
  local refused = lock_status(job_key, token)
  if refused ~= 0 then
    return refused
  end
  if redis.call("LREM", active_key, -1, job_id) == 0 then
    return -3
  end
  release_lock(job_key, stalled_key, job_id, token)
  return 0
end
