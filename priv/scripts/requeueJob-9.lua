--[[
  requeueJob: one job back to run. Retry = failed or completed -> wait;
  promote = delayed -> wait. A job with a priority goes to prioritized; a
  paused queue receives it in paused.

  KEYS[1] source set: failed, completed or delayed (zset)
  KEYS[2] wait
  KEYS[3] paused
  KEYS[4] meta
  KEYS[5] active
  KEYS[6] prioritized
  KEYS[7] pc
  KEYS[8] marker
  KEYS[9] events

  ARGV[1] key prefix "<prefix>:<queue>:"
  ARGV[2] job id
  ARGV[3] source state name: "failed", "completed" or "delayed" (the event's prev)

  Returns: 0 done; -1 the job hash is gone; -3 the job is not in the source set
  (someone moved it first: nothing is changed).

  Events: waiting (jobId, prev = the source state).
  Retry clears finishedOn, processedOn, returnvalue, failedReason (attempt
  counters and the stacktrace are kept); promote sets delay to 0.
]]
--- @include "requeueJobs"

local job_id = ARGV[2]
if redis.call("EXISTS", ARGV[1] .. job_id) == 0 then
  return -1
end
if redis.call("ZREM", KEYS[1], job_id) == 0 then
  return -3
end
requeue_jobs(requeue_keys(KEYS), ARGV[1], {job_id}, ARGV[3])
return 0
