#!lua flags=allow-oom
--[[
  obliterate: delete a paused queue with all its jobs and keys, in bounded
  batches; the caller repeats while its first answer is 1. Refuses while
  jobs are active unless forced (a forced obliterate leaves their workers'
  finishes with -1).

  KEYS[1]  meta
  KEYS[2]  active
  KEYS[3]  wait
  KEYS[4]  paused
  KEYS[5]  prioritized
  KEYS[6]  delayed
  KEYS[7]  completed
  KEYS[8]  failed
  KEYS[9]  waiting-children
  KEYS[10] repeat (job schedulers; each member's "repeat:<id>" hash goes too)
  KEYS[11] id
  KEYS[12] pc
  KEYS[13] marker
  KEYS[14] events
  KEYS[15] stalled
  KEYS[16] stalled-check
  KEYS[17] limiter
  KEYS[18] metrics:completed
  KEYS[19] metrics:completed:data
  KEYS[20] metrics:failed
  KEYS[21] metrics:failed:data

  ARGV[1] key prefix "<prefix>:<queue>:"
  ARGV[2] batch size (> 0): jobs deleted per call
  ARGV[3] "1" to delete active jobs too
  ARGV[4] now (ms): when a flow parent this frees enters wait or delayed

  Returns: {more, skipped}: more is 1 when there is more to delete, 0 when
  the queue is gone; skipped lists the ids whose key is not a job hash (it
  may be another structure), which are not deleted, as a flat list id,
  reason, id, reason ... (reasons: includes/keyCheck.lua; each call looks at
  them again). The state holding such an id survives the obliterate with it.
  -3 the queue is not paused or (without force) has active jobs. Refused
  with a WRONGTYPE error naming the key, nothing changed, when one of the
  states or the meta hash has the wrong type.

  Memory: runs when Redis is over maxmemory (allow-oom): it only deletes.

  Events: none of its own (the events stream is deleted with the rest).
  A flow parent freed by a deletion gets waiting (prev = waiting-children)
  or delayed in its own queue's stream.
]]
--- @include "discardJob"
--- @include "takeBatch"
--- @include "keyCheck"

local queue_base = ARGV[1]
local budget = tonumber(ARGV[2])

local refused = structure_refusal({
  KEYS[1], "hash", KEYS[2], "list", KEYS[3], "list", KEYS[4], "list",
  KEYS[5], "zset", KEYS[6], "zset", KEYS[7], "zset", KEYS[8], "zset",
  KEYS[9], "zset", KEYS[10], "zset",
})
if refused then
  return refused
end
if redis.call("HEXISTS", KEYS[1], "paused") == 0 then
  return -3
end
if ARGV[3] ~= "1" and redis.call("LLEN", KEYS[2]) > 0 then
  return -3
end

local check = job_checker({}, {})
local skipped = {}
-- An id without a hash is deleted with the rest; a key that is not a job
-- hash is not.
local function keep(job_id)
  local problem = check(queue_base .. job_id)
  if problem ~= "missing" then
    return problem
  end
  return nil
end

-- waiting-children first: deleting a child releases a parent of this queue
-- still waiting for it into wait, paused, prioritized or delayed, and a
-- state this call had already passed would keep it (with its hash) once the
-- queue's keys go. A parent taken first is gone when its children are.
for _, index in ipairs({9, 2, 3, 4, 5, 6, 7, 8}) do
  local ids = take_batch(KEYS[index], index <= 4, budget, keep, skipped)
  for _, job_id in ipairs(ids) do
    discard_job(queue_base, job_id, tonumber(ARGV[4]))
  end
  budget = budget - #ids
end

local schedulers = take_batch(KEYS[10], false, budget, function() return nil end, skipped)
for _, scheduler_id in ipairs(schedulers) do
  redis.call("DEL", queue_base .. "repeat:" .. scheduler_id)
end
budget = budget - #schedulers

if budget <= 0 then
  return {1, skipped}
end
redis.call("DEL", unpack(KEYS, 11))
redis.call("DEL", KEYS[1])
return {0, skipped}
