#!lua flags=allow-oom
--[[
  drain: delete the jobs that have not started: wait, paused, prioritized
  and, when asked, delayed (a job scheduler's next run is kept). Active,
  completed and failed jobs stay. Bounded: at most `batch` jobs per call; the
  caller repeats while the first answer is 1.

  KEYS[1] wait
  KEYS[2] paused
  KEYS[3] prioritized
  KEYS[4] delayed
  KEYS[5] pc
  KEYS[6] meta
  KEYS[7] events

  ARGV[1] key prefix "<prefix>:<queue>:"
  ARGV[2] "1" to drain delayed jobs too
  ARGV[3] batch size (> 0)
  ARGV[4] now (ms): when a flow parent this frees enters wait or delayed

  Returns: {more, skipped}: more is 1 when the batch was used up (there may
  be more), 0 when the queue is drained; skipped lists the jobs left where
  they were because their key is not a job hash, as a flat list id, reason,
  id, reason ... (reasons: includes/keyCheck.lua; kept ones are looked at
  again by each call, so a caller sees them more than once). Refused with a
  WRONGTYPE error naming the key, nothing changed, when one of the KEYS has
  the wrong type.

  Memory: runs when Redis is over maxmemory (allow-oom): deleting jobs is how
  an operator frees memory.

  Events: drained (no fields) from the call that finishes the drain.
  A flow parent freed by a deletion gets waiting (prev = waiting-children)
  or delayed in its own queue's stream.
]]
--- @include "emitEvent"
--- @include "discardJob"
--- @include "takeBatch"
--- @include "keyCheck"

local queue_base = ARGV[1]
local budget = tonumber(ARGV[3])
local now = tonumber(ARGV[4])

local refused = structure_refusal({
  KEYS[1], "list", KEYS[2], "list", KEYS[3], "zset", KEYS[4], "zset",
  KEYS[6], "hash", KEYS[7], "stream",
})
if refused then
  return refused
end

local check, at = job_checker({}, {}, {"rjk"})
local skipped = {}

-- An id without a hash is simply deleted; a key that is not a job hash is
-- not (it may be another structure), and a scheduler's next run stays.
local function keep(job_id, keep_scheduled)
  local problem, fields = check(queue_base .. job_id)
  if problem == "missing" then
    return nil
  end
  if problem then
    return problem
  end
  return keep_scheduled and fields[at.rjk] and true or nil
end

local function drain_state(key, is_list, keep_scheduled)
  local ids = take_batch(key, is_list, budget, function(job_id)
    return keep(job_id, keep_scheduled)
  end, skipped)
  for _, job_id in ipairs(ids) do
    discard_job(queue_base, job_id, now)
  end
  budget = budget - #ids
end

-- Every id is judged as its state's batch is taken, before that batch's
-- first write; nothing judged afterwards can fail.
drain_state(KEYS[1], true, false)
drain_state(KEYS[2], true, false)
drain_state(KEYS[3], false, false)
if ARGV[2] == "1" then
  drain_state(KEYS[4], false, true)
end

if budget <= 0 then
  return {1, skipped}
end
redis.call("DEL", KEYS[5])
emit_event(KEYS[7], events_cap(KEYS[6]), "drained")
return {0, skipped}
