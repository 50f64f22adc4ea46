--[[
  requeueJobs: a bounded batch of retry-all (failed/completed -> wait) or
  promote-all (delayed -> wait). The caller repeats the call until nothing is
  left, so no single call blocks Redis for long and no job data leaves Redis.

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
  ARGV[2] source state name: "failed", "completed" or "delayed" (the event's prev)
  ARGV[3] batch size (> 0)
  ARGV[4] highest score to take ("+inf" for all). Retry-all passes the time it
          started so jobs failing again meanwhile are not retried in a loop.

  Returns: {moved, remaining}: jobs requeued by this call (ids without a hash
  are dropped from the set and not counted) and how many still qualify.

  Events: waiting (jobId, prev = the source state) per job.
]]
--- @include "requeueJobs"
--- @include "callSliced"

local source = KEYS[1]
local max_score = ARGV[4]
local ids = redis.call("ZRANGEBYSCORE", source, "-inf", max_score, "LIMIT", 0, tonumber(ARGV[3]))
call_sliced("ZREM", source, ids)
local moved = requeue_jobs(requeue_keys(KEYS), ARGV[1], ids, ARGV[2])
return {moved, redis.call("ZCOUNT", source, "-inf", max_score)}
