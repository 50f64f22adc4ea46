--[[
  drain: delete the jobs that have not started: wait, paused, prioritized
  and, when asked, delayed (a job scheduler's next run is kept). Active,
  completed and failed jobs stay. Bounded: at most `batch` jobs per call; the
  caller repeats while it returns 1.

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

  Returns: 1 when the batch was used up (there may be more), 0 when the
  queue is drained.

  Events: drained (no fields) from the call that finishes the drain.
  A flow parent freed by a deletion gets waiting (prev = waiting-children)
  or delayed in its own queue's stream.
]]
--- @include "emitEvent"
--- @include "discardJob"
--- @include "takeBatch"
--- @include "callSliced"

local queue_base = ARGV[1]
local budget = tonumber(ARGV[3])
local now = tonumber(ARGV[4])

local function discard_all(ids)
  for _, job_id in ipairs(ids) do
    discard_job(queue_base, job_id, now)
  end
  budget = budget - #ids
end

discard_all(take_batch(KEYS[1], true, budget))
discard_all(take_batch(KEYS[2], true, budget))
discard_all(take_batch(KEYS[3], false, budget))

if ARGV[2] == "1" then
  -- Scheduler-owned jobs are skipped, not taken; everything else scanned is
  -- taken, so the next call only rescans the few kept ones.
  local start, chunk_size = 0, 1000
  local taken = {}
  while #taken < budget do
    local chunk = redis.call("ZRANGE", KEYS[4], start, start + chunk_size - 1)
    for _, job_id in ipairs(chunk) do
      if #taken < budget and redis.call("HEXISTS", queue_base .. job_id, "rjk") == 0 then
        taken[#taken + 1] = job_id
      end
    end
    if #chunk < chunk_size then
      break
    end
    start = start + chunk_size
  end
  call_sliced("ZREM", KEYS[4], taken)
  discard_all(taken)
end

if budget <= 0 then
  return 1
end
redis.call("DEL", KEYS[5])
emit_event(KEYS[7], events_cap(KEYS[6]), "drained")
return 0
