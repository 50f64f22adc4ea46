#!lua
--[[
  requeueJob: one job back to run. Retry = failed or completed -> wait;
  promote = delayed -> wait. A job with a priority goes to prioritized; a
  paused queue receives it in paused.

  KEYS[1]  source set: failed, completed or delayed (zset)
  KEYS[2]  wait
  KEYS[3]  paused
  KEYS[4]  meta
  KEYS[5]  active
  KEYS[6]  prioritized
  KEYS[7]  pc
  KEYS[8]  marker
  KEYS[9]  events
  KEYS[10] completed  } the sorted-set states the job must not also be in
  KEYS[11] failed     } (the one that is the source is passed over)
  KEYS[12] delayed    }
  KEYS[13] waiting-children

  ARGV[1] key prefix "<prefix>:<queue>:"
  ARGV[2] job id
  ARGV[3] source state name: "failed", "completed" or "delayed" (the event's prev)

  Returns: 0 done; -1 the job hash is gone; -3 the job is not in the source set
  (someone moved it first); {"broken", reason} the job's keys are broken or
  another state holds it too (reasons: includes/keyCheck.lua), and
  it was left where it was. Refused with a WRONGTYPE error naming the key when
  one of the KEYS has the wrong type. In every refusal nothing is changed.

  Memory: refused when Redis is over maxmemory (no allow-oom flag).

  Events: waiting (jobId, prev = the source state).
  Retry clears finishedOn, processedOn, returnvalue, failedReason (attempt
  counters and the stacktrace are kept); promote sets delay to 0.
]]
--- @include "requeueJobs"

local q = requeue_keys(KEYS, ARGV[3])
local refused = requeue_refusal(q)
if refused then
  return refused
end
local job_id = ARGV[2]
if key_type(ARGV[1] .. job_id) == "none" then
  return -1
end
if not redis.call("ZSCORE", q.source, job_id) then
  return -3
end
-- One job may afford what a batch may not: walking the lists for a copy.
local listed = states_holding(job_states({"active", q.active, "wait", q.wait, "paused", q.paused}),
  job_id)
if #listed > 0 then
  return broken_reply("states:" .. ARGV[3] .. "," .. listed[1].name)
end
local moved, skipped = requeue_jobs(q, ARGV[1], {job_id}, ARGV[3], nil, nil, 0)
if moved == 0 then
  return broken_reply(skipped[2])
end
return 0
