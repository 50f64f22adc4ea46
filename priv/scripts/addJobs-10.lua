#!lua
--[[
  addJobs: add many jobs in one call, each exactly as addJob would add it (the
  same fields, events, ids and results, in the order given). One call saves
  the per-command cost of a pipeline of addJob calls: the events cap and the
  ready list are read once, the marker is set once.

  KEYS[1]  wait            list
  KEYS[2]  paused          list (5.x: holds ready jobs while the queue is paused)
  KEYS[3]  meta            hash
  KEYS[4]  id              string, INCR on every add (custom id or not)
  KEYS[5]  delayed         zset
  KEYS[6]  prioritized     zset
  KEYS[7]  pc              string, priority counter
  KEYS[8]  active          list (read for the global concurrency check)
  KEYS[9]  events          stream
  KEYS[10] marker          zset

  ARGV[1]  key prefix "<prefix>:<queue>:"
  ARGV[2]  and on: twelve arguments per job, laid out as addJob's ARGV[2] ..
           ARGV[13] (custom id, name, data, opts, timestamp, delay, priority,
           lifo, deduplication id, deduplication ttl, parent key, parent JSON)

  Returns: a list with one entry per job, in order: its id (text), the existing
  job's id for a taken custom id or a held deduplication id, or -5 when its
  parent is gone (that job only is skipped; the others are added).
  A parent whose key is not a hash (or whose dependencies are not a set)
  counts as gone; a generated id whose key exists (a job the counter fell
  behind, or anything else) is passed over, the counter stepping on past it
  (includes/addJobSteps.lua); a deduplication key of another type
  is ignored. Refused with a WRONGTYPE error naming the key, nothing
  changed, when one of the KEYS has the wrong type.

  Memory: refused when Redis is over maxmemory (no allow-oom flag).

  Events: per job, as addJob: added (jobId, name) then waiting (jobId) or
  delayed (jobId, delay = absolute due time); duplicated (jobId);
  deduplicated (jobId, deduplicationId, deduplicatedJobId).
]]
--- @include "addJobSteps"

local refused = add_refusal(KEYS)
if refused then
  return refused
end
local ctx = add_context(KEYS, ARGV[1])
local results = {}
for at = 2, #ARGV, ADD_JOB_FIELDS do
  results[#results + 1] = add_one_job(ctx, ARGV, at)
end
finish_adds(ctx)
return results
