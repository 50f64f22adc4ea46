#!lua flags=allow-oom
--[[
  removeJob: delete a job from whatever state holds it, with all its keys
  (hash, logs, lock, dependencies, processed ...). An active job may be
  removed: its lock goes with it, so its worker's finish gets -1.

  KEYS[1]  wait
  KEYS[2]  paused
  KEYS[3]  active
  KEYS[4]  prioritized
  KEYS[5]  delayed
  KEYS[6]  completed
  KEYS[7]  failed
  KEYS[8]  waiting-children
  KEYS[9]  stalled
  KEYS[10] repeat (job schedulers)
  KEYS[11] meta
  KEYS[12] events

  ARGV[1] key prefix "<prefix>:<queue>:"
  ARGV[2] job id
  ARGV[3] now (ms): when a flow parent this frees enters wait or delayed
  ARGV[4..n] optional: the states the job must be in (e.g. "failed", or
          "wait" and "paused"); when given and none holds it, -3 and nothing
          changes. An action on a set of ids found earlier (a search result)
          passes them, so a job that moved meanwhile is skipped, not removed.

  Returns: 0 done; -1 neither the job hash nor its id in any state exists;
  -3 the job is in none of the states of ARGV[4..n];
  -8 the job is the next run of a job scheduler that still exists (remove the
  scheduler instead); {"broken", reason} the job's key is not a job hash
  (reasons: includes/keyCheck.lua): it may be another structure whose name
  looks like a job key, so it is not deleted and the id stays where it was.
  Refused with a WRONGTYPE error naming the key when one of the KEYS has the
  wrong type. In every refusal nothing is changed.
  An id left in a state without its hash is removed too (returns 0), and an
  id found in several states leaves all of them.
  A pending child of a flow is dropped from its parent's dependencies; the
  parent moves on when it was the last (the parent's queue must share this
  prefix's hash tag on a cluster).

  Memory: runs when Redis is over maxmemory (allow-oom): deleting jobs is how
  an operator frees memory, and a removal writes only one event.

  Events: removed (jobId, prev = the state it was in, "unknown" when none).
  A flow parent freed by a deletion gets waiting (prev = waiting-children)
  or delayed in its own queue's stream.
]]
--- @include "emitEvent"
--- @include "locateJob"
--- @include "discardJob"
--- @include "keyCheck"

local queue_base = ARGV[1]
local job_id = ARGV[2]
local job_key = queue_base .. job_id

local refused = structure_refusal({
  KEYS[1], "list", KEYS[2], "list", KEYS[3], "list", KEYS[4], "zset",
  KEYS[5], "zset", KEYS[6], "zset", KEYS[7], "zset", KEYS[8], "zset",
  KEYS[9], "set", KEYS[10], "zset", KEYS[11], "hash", KEYS[12], "stream",
})
if refused then
  return refused
end
local found = states_holding(job_states({
  "completed", KEYS[6], "failed", KEYS[7], "delayed", KEYS[5], "prioritized", KEYS[4],
  "waiting-children", KEYS[8], "active", KEYS[3], "wait", KEYS[1], "paused", KEYS[2],
}), job_id)
local problem = job_checker({}, {})(job_key)
if problem == "missing" and #found == 0 then
  return -1
end
if problem and problem ~= "missing" then
  return broken_reply(problem)
end
if #ARGV >= 4 then
  local expected = false
  for i = 4, #ARGV do
    for _, state in ipairs(found) do
      expected = expected or state.name == ARGV[i]
    end
  end
  if not expected then
    return -3
  end
end
for _, state in ipairs(found) do
  if state.name == "delayed" then
    local scheduler = redis.call("HGET", job_key, "rjk")
    if scheduler and redis.call("ZSCORE", KEYS[10], scheduler) then
      return -8
    end
  end
end

for _, state in ipairs(found) do
  take_job_out(state, job_id)
end
redis.call("SREM", KEYS[9], job_id)
discard_job(queue_base, job_id, tonumber(ARGV[3]))
emit_event(KEYS[12], events_cap(KEYS[11]), "removed", "jobId", job_id,
  "prev", found[1] and found[1].name or "unknown")
return 0
