--- @include "removeJobKeys"

-- Deleting a job for good (remove, clean, drain, obliterate). Its
-- deduplication id is freed when it still names this job, whatever its ttl:
-- the job it protected is gone. A key naming a newer job is left alone.
local function discard_job(queue_base, job_id)
  local job_key = queue_base .. job_id
  local dedup_id = redis.call("HGET", job_key, "deid")
  if dedup_id then
    local dedup_key = queue_base .. "de:" .. dedup_id
    if redis.call("GET", dedup_key) == job_id then
      redis.call("DEL", dedup_key)
    end
  end
  remove_job_keys(job_key)
end
