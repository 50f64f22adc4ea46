#!lua
--[[ releaseJob: a worker hands back a job it holds without finishing it (a
  forced shutdown); the job runs next, and no attempt is counted.

  KEYS[1]  active   (list)
  KEYS[2]  wait     (list)
  KEYS[3]  paused   (list)
  KEYS[4]  meta     (hash)
  KEYS[5]  marker   (zset)
  KEYS[6]  events   (stream)
  KEYS[7]  stalled  (set)
  KEYS[8]  job key "<prefix>:<queue>:<id>" (hash; its lock is KEYS[8] .. ":lock")

  ARGV[1]  job id
  ARGV[2]  lock token the worker holds ("0" = no lock check)

  Returns 0, or -1 (no such job), -2 (lock gone: the stalled checker or an
  admin already moved it), -6 (lock held by another token), -3 (not active),
  or a WRONGTYPE error naming a key of the wrong type. The job's hash is not
  written, so only its existence matters. Every check runs before the first
  write, so a refused call changes nothing.

  Memory: refused when Redis is over maxmemory (no allow-oom flag): the job
  stays active until its lock expires and the stalled check hands it back.

  Events: waiting (jobId, prev=active).
]]

--- @include "lockCheck"
--- @include "readyTarget"
--- @include "emitEvent"
--- @include "keyCheck"

local queue = { active = KEYS[1], wait = KEYS[2], paused = KEYS[3], meta = KEYS[4], marker = KEYS[5] }
local events_key, stalled_key, job_key = KEYS[6], KEYS[7], KEYS[8]
local job_id, token = ARGV[1], ARGV[2]

local refused_structure = structure_refusal({
  queue.active, "list", queue.wait, "list", queue.paused, "list", queue.meta, "hash",
  queue.marker, "zset", events_key, "stream", stalled_key, "set",
})
if refused_structure then
  return refused_structure
end
if redis.call("EXISTS", job_key) == 0 then
  return -1
end
local refused = leave_active(queue.active, stalled_key, job_key, job_id, token)
if refused ~= 0 then
  return refused
end
-- The tail of the ready list is taken first: a released job keeps its turn
-- (pushed as a lifo job is), as a recovered stalled job does.
push_ready(queue, job_id, 0, true)
emit_event(events_key, events_cap(queue.meta), "waiting", "jobId", job_id, "prev", "active")
return 0
