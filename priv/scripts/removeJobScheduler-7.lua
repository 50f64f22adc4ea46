#!lua flags=allow-oom
--[[
  removeJobScheduler: delete a job scheduler (a 5.x job scheduler or a legacy
  repeatable job: both are a member of `repeat` and a `repeat:<id>` hash) and
  its pending run, when no worker has taken that run yet (a run being
  processed finishes as usual and adds no next run: its scheduler is gone).

  KEYS[1]  repeat          zset, scheduler id -> next run (ms)
  KEYS[2]  delayed         zset
  KEYS[3]  prioritized     zset
  KEYS[4]  wait            list
  KEYS[5]  paused          list
  KEYS[6]  meta            hash
  KEYS[7]  events          stream

  ARGV[1]  key prefix "<prefix>:<queue>:"
  ARGV[2]  scheduler id
  ARGV[3]  now (ms): when a flow parent the deletion frees enters wait or delayed
  ARGV[4..] for a legacy repeatable job's key (`name:id:endDate:tz:pattern`):
           the ids its pending run may have (they are checksums, worked out by
           the runtime); the run removed is one of them that waits in a state
           and names the key in `rjk`

  Returns: {"removed", pending run's job id or ""}; {"missing", ""} when there
  is no such scheduler (neither a member of `repeat` nor a hash). {"broken", reason} when the
  pending run's job key is no job hash or the run sits in two states
  (reasons: includes/keyCheck.lua). Refused with a WRONGTYPE error naming
  the key when one of the KEYS or the scheduler's definition key has the
  wrong type. In every refusal nothing is changed.

  Memory: runs when Redis is over maxmemory (allow-oom): deleting is how an
  operator frees memory, and a removal writes only one event.

  Events: removed (jobId = the pending run, prev = its state).
]]
--- @include "schedulerSteps"

local queue_base = ARGV[1]
local scheduler_id = ARGV[2]
local definition_key = scheduler_key(KEYS[1], scheduler_id)

local refused = structure_refusal({
  KEYS[1], "zset", KEYS[2], "zset", KEYS[3], "zset", KEYS[4], "list", KEYS[5], "list",
  KEYS[6], "hash", KEYS[7], "stream", definition_key, "hash",
})
if refused then
  return refused
end

local next_run = as_number(redis.call("ZSCORE", KEYS[1], scheduler_id))
if not next_run and redis.call("EXISTS", definition_key) == 0 then
  return {"missing", ""}
end
local states = pending_states(KEYS[2], KEYS[3], KEYS[4], KEYS[5])
local pending_id, found, problem
if #ARGV > 3 then
  pending_id, found, problem = find_legacy_pending_run(queue_base, scheduler_id,
    {unpack(ARGV, 4)}, states)
else
  pending_id, found, problem = find_pending_run(queue_base, scheduler_id, next_run, states)
end
if problem then
  return broken_reply(problem)
end

if not discard_pending_run(queue_base, pending_id, found, tonumber(ARGV[3]), KEYS[7],
    events_cap(KEYS[6])) then
  pending_id = ""
end
redis.call("ZREM", KEYS[1], scheduler_id)
redis.call("DEL", definition_key)
return {"removed", pending_id}
