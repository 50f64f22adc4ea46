#!lua
--[[
  updateData: an operator replaces a job's data before it runs again. Only a
  job that no worker holds and that has not completed may be edited: waiting
  (wait or paused), prioritized, delayed or failed. A job that became active
  (a worker took it) or finished since the operator loaded it is refused, so
  an edit never races a running attempt: the script runs atomically, and a
  worker's pickup happens either wholly before it (refused) or after it (the
  worker reads the new data).

  KEYS[1] wait
  KEYS[2] paused
  KEYS[3] active
  KEYS[4] prioritized
  KEYS[5] delayed
  KEYS[6] failed
  KEYS[7] completed         } looked at only: a job there may not be edited,
  KEYS[8] waiting-children  } and one there as well is in two states

  ARGV[1] key prefix "<prefix>:<queue>:"
  ARGV[2] job id
  ARGV[3] the new data: JSON text, stored as given in the hash's `data` field
          (what every BullMQ runtime reads); the caller has checked it

  Returns: {state, previous data} done: the state the job was edited in
  ("wait", "paused", "prioritized", "delayed" or "failed") and the data it
  held before ("" when it had none); -1 the job hash is gone; -3 the job is in
  no state it may be edited in (active, completed, waiting-children, none);
  {"broken", reason} the job's key is not a job hash or several states hold
  it (reasons: includes/keyCheck.lua), and it was left as it was. Refused
  with a WRONGTYPE error naming the key when one of the KEYS has the wrong
  type. In every refusal nothing is changed.

  Memory: refused when Redis is over maxmemory (no allow-oom flag).

  Events: none (BullMQ's own data update emits none either; the dashboard
  audits the edit instead).
]]
--- @include "locateJob"
--- @include "keyCheck"
--- @include "jobInState"

local job_id = ARGV[2]
local job_key = ARGV[1] .. job_id

local refused = structure_refusal({
  KEYS[1], "list", KEYS[2], "list", KEYS[3], "list", KEYS[4], "zset",
  KEYS[5], "zset", KEYS[6], "zset", KEYS[7], "zset", KEYS[8], "zset",
})
if refused then
  return refused
end
-- Sorted sets first (ZSCORE is O(1)); the lists are walked only after them.
-- An active job is refused: a worker holds it and reads its data.
local job_refused, state = job_in_state(job_key, job_id, job_states({
  "prioritized", KEYS[4], "delayed", KEYS[5], "failed", KEYS[6], "completed", KEYS[7],
  "waiting-children", KEYS[8], "active", KEYS[3], "wait", KEYS[1], "paused", KEYS[2],
}), {"wait", "paused", "prioritized", "delayed", "failed"})
if job_refused then
  return job_refused
end

local previous = redis.call("HGET", job_key, "data")
redis.call("HSET", job_key, "data", ARGV[3])
return {state.name, previous or ""}
