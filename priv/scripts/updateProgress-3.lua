--[[
  updateProgress: record a job's progress and tell listeners.

  KEYS[1] job key
  KEYS[2] events
  KEYS[3] meta

  ARGV[1] job id
  ARGV[2] progress (JSON text: a number or an object)

  Returns: 0 done; -1 the job hash is gone.

  Events: progress (jobId, data = the progress JSON).
]]
--- @include "emitEvent"

if redis.call("EXISTS", KEYS[1]) == 0 then
  return -1
end
redis.call("HSET", KEYS[1], "progress", ARGV[2])
emit_event(KEYS[2], events_cap(KEYS[3]), "progress", "jobId", ARGV[1], "data", ARGV[2])
return 0
