--- @include "removeJobKeys"
--- @include "parentRelease"
--- @include "dedupRelease"

-- Deleting a job for good (remove, clean, drain, obliterate). Its
-- deduplication id is freed when it still names this job, whatever its ttl:
-- the job it protected is gone. A key naming a newer job is left alone.
-- A child still pending in a flow stops being waited for, and its parent
-- moves on when it was the last one (the parent is named by the child's hash;
-- on a cluster that works when both queues share the prefix's hash tag);
-- `release`, when given, is what frees that parent instead (child_removed).
local function discard_job(queue_base, job_id, now, release)
  local job_key = queue_base .. job_id
  local dedup_id = redis.call("HGET", job_key, "deid")
  if dedup_id then
    local dedup_key = queue_base .. "de:" .. dedup_id
    if dedup_key_names(dedup_key, job_id) then
      redis.call("DEL", dedup_key)
    end
  end
  local parent = parent_of(job_key)
  if parent then
    child_removed(parent, job_key, now, release)
  end
  remove_job_keys(job_key)
end
