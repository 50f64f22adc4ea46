#!lua
--[[
  updateProgress: record a job's progress and tell listeners.

  KEYS[1] job key
  KEYS[2] events
  KEYS[3] meta

  ARGV[1] job id
  ARGV[2] progress (JSON text: a number or an object)

  Returns: 0 done; -1 the job hash is gone; {"broken", reason} the job's key
  is not a job hash (reasons: includes/keyCheck.lua); a WRONGTYPE error
  naming the events stream or meta when they have the wrong type. Nothing
  is changed by a refusal.

  Memory: refused when Redis is over maxmemory (no allow-oom flag).

  Events: progress (jobId, data = the progress JSON).
]]
--- @include "emitEvent"
--- @include "keyCheck"

local refused = structure_refusal({KEYS[2], "stream", KEYS[3], "hash"})
if refused then
  return refused
end
local job_refused = job_refusal(KEYS[1], {})
if job_refused then
  return job_refused
end
redis.call("HSET", KEYS[1], "progress", ARGV[2])
emit_event(KEYS[2], events_cap(KEYS[3]), "progress", "jobId", ARGV[1], "data", ARGV[2])
return 0
