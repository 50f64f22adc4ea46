#!lua
--[[
  addJob: store a new job and make it ready, delayed or prioritized.

  KEYS[1]  wait            list
  KEYS[2]  paused          list (5.x: holds ready jobs while the queue is paused)
  KEYS[3]  meta            hash
  KEYS[4]  id              string, INCR on every call (custom id or not)
  KEYS[5]  delayed         zset
  KEYS[6]  prioritized     zset
  KEYS[7]  pc              string, priority counter
  KEYS[8]  active          list (read for the global concurrency check)
  KEYS[9]  events          stream
  KEYS[10] marker          zset

  ARGV[1]  key prefix "<prefix>:<queue>:"
  ARGV[2]  custom job id, "" to use the counter
  ARGV[3]  job name
  ARGV[4]  data (JSON text, stored as given)
  ARGV[5]  opts (JSON text, stored as given)
  ARGV[6]  timestamp (ms)
  ARGV[7]  delay (ms, relative; 0 = none)
  ARGV[8]  priority (0 = none, 1..2^21)
  ARGV[9]  lifo "1" / "0"
  ARGV[10] deduplication id, "" = none
  ARGV[11] deduplication ttl (ms, 0 = until the key is removed)
  ARGV[12] parent job key, "" = none (flows across queues need one hash tag on a cluster)
  ARGV[13] parent JSON {id, queueKey, ...}, "" = none

  Returns: the job id (text): the new job's, or the existing one's when the
  custom id is taken or the deduplication id is held. -5 when the parent is gone.
  A parent whose key is not a hash (or whose dependencies are not a set)
  counts as gone; a generated id whose key exists (a job the counter fell
  behind, or anything else) is passed over, the counter stepping on past it
  (includes/addJobSteps.lua); a deduplication key of another type
  is ignored. Refused with a WRONGTYPE error naming the key, nothing
  changed, when one of the KEYS has the wrong type.

  Memory: refused when Redis is over maxmemory (no allow-oom flag).

  Events: added (jobId, name) then waiting (jobId) or delayed (jobId, delay =
  absolute due time); duplicated (jobId) for a taken custom id; deduplicated
  (jobId = the kept job, deduplicationId, deduplicatedJobId = the refused id).
]]
--- @include "addJobSteps"

local refused = add_refusal(KEYS)
if refused then
  return refused
end
local ctx = add_context(KEYS, ARGV[1])
-- ARGV[2] .. ARGV[13] describe the job in the order addJobSteps reads them.
local result = add_one_job(ctx, ARGV, 2)
finish_adds(ctx)
return result
