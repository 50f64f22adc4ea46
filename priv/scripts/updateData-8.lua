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

local job_id = ARGV[2]
local job_key = ARGV[1] .. job_id

local refused = structure_refusal({
  KEYS[1], "list", KEYS[2], "list", KEYS[3], "list", KEYS[4], "zset",
  KEYS[5], "zset", KEYS[6], "zset", KEYS[7], "zset", KEYS[8], "zset",
})
if refused then
  return refused
end
local job_refused = job_refusal(job_key, {})
if job_refused then
  return job_refused
end
-- Sorted sets first (ZSCORE is O(1)); the lists are walked only after them.
local found = states_holding({
  {name = "prioritized", key = KEYS[4]},
  {name = "delayed", key = KEYS[5]},
  {name = "failed", key = KEYS[6]},
  {name = "completed", key = KEYS[7]},
  {name = "waiting-children", key = KEYS[8]},
  {name = "active", key = KEYS[3], list = true},
  {name = "wait", key = KEYS[1], list = true},
  {name = "paused", key = KEYS[2], list = true},
}, job_id)
if #found > 1 then
  return broken_reply(two_states_reason(found))
end
local state = found[1]
if not state or state.name == "active" or state.name == "completed"
    or state.name == "waiting-children" then
  return -3
end

local previous = redis.call("HGET", job_key, "data")
redis.call("HSET", job_key, "data", ARGV[3])
return {state.name, previous or ""}
