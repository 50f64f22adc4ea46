--[[
  obliterate: delete a paused queue with all its jobs and keys, in bounded
  batches; the caller repeats while it returns 1. Refuses while jobs are
  active unless forced (a forced obliterate leaves their workers' finishes
  with -1).

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

  Returns: 1 more to delete, 0 the queue is gone, -3 the queue is not paused
  or (without force) has active jobs.

  Events: none of its own (the events stream is deleted with the rest).
  A flow parent freed by a deletion gets waiting (prev = waiting-children)
  or delayed in its own queue's stream.
]]
--- @include "discardJob"
--- @include "takeBatch"

local queue_base = ARGV[1]
local budget = tonumber(ARGV[2])

if redis.call("HEXISTS", KEYS[1], "paused") == 0 then
  return -3
end
if ARGV[3] ~= "1" and redis.call("LLEN", KEYS[2]) > 0 then
  return -3
end

for index = 2, 9 do
  local ids = take_batch(KEYS[index], index <= 4, budget)
  for _, job_id in ipairs(ids) do
    discard_job(queue_base, job_id, tonumber(ARGV[4]))
  end
  budget = budget - #ids
end

local schedulers = take_batch(KEYS[10], false, budget)
for _, scheduler_id in ipairs(schedulers) do
  redis.call("DEL", queue_base .. "repeat:" .. scheduler_id)
end
budget = budget - #schedulers

if budget <= 0 then
  return 1
end
redis.call("DEL", unpack(KEYS, 11))
redis.call("DEL", KEYS[1])
return 0
