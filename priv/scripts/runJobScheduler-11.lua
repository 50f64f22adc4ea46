#!lua
--[[
  runJobScheduler: "run now": add a job from a job scheduler's template (its
  name, data and options), ready at once, without touching the schedule: the
  scheduler keeps its next run and its iteration count. The job is a plain
  job (no `rjk`), so no worker takes it for a scheduled run and schedules a
  run after it.

  KEYS[1]  wait            list
  KEYS[2]  paused          list
  KEYS[3]  meta            hash
  KEYS[4]  id              string, INCR on every add
  KEYS[5]  delayed         zset (read by the add steps; a run-now job is never delayed)
  KEYS[6]  prioritized     zset
  KEYS[7]  pc              string, priority counter
  KEYS[8]  active          list
  KEYS[9]  events          stream
  KEYS[10] marker          zset
  KEYS[11] repeat          zset, scheduler id -> next run (ms)

  ARGV[1]  key prefix "<prefix>:<queue>:"
  ARGV[2]  scheduler id
  ARGV[3]  now (ms)

  Returns: the new job's id, or {"broken", reason} when there is no template
  to run, nothing changed: "scheduler:missing" no such scheduler,
  "scheduler:definition" its definition hash is missing,
  "scheduler:legacy" a legacy repeatable job (it keeps no template),
  "scheduler:name" no job name, "scheduler:data" data that is not JSON,
  "scheduler:opts" options that are not a JSON object. Refused with a
  WRONGTYPE error naming the key, nothing changed, when one of the KEYS or
  the scheduler's hash has the wrong type.

  Memory: refused when Redis is over maxmemory (no allow-oom flag).

  Events: added then waiting (jobId).
]]
--- @include "schedulerSteps"

local queue_base = ARGV[1]
local scheduler_id = ARGV[2]
local now = ARGV[3]

local definition_key, refused = definition_for_adding(KEYS, scheduler_id)
if refused then
  return refused
end

if not redis.call("ZSCORE", KEYS[11], scheduler_id) then
  return broken_reply("scheduler:missing")
end
if redis.call("EXISTS", definition_key) == 0 then
  return broken_reply("scheduler:definition")
end
local template = redis.call("HMGET", definition_key, "name", "data", "opts", "ic")
if not template[4] then
  return broken_reply("scheduler:legacy")
end
if not template[1] then
  return broken_reply("scheduler:name")
end
local data = template[2] or "{}"
if not pcall(cjson.decode, data) then
  return broken_reply("scheduler:data")
end
local opts_json = template[3] or "{}"
local decoded, opts = pcall(cjson.decode, opts_json)
if not decoded or type(opts) ~= "table" then
  return broken_reply("scheduler:opts")
end

local priority, lifo = ready_options(opts)
local ctx = add_context(KEYS, queue_base)
local job_id = add_one_job(ctx, {"", template[1], data, opts_json, now, 0, priority,
  lifo and "1" or "0", "", 0, "", ""}, 1)
finish_adds(ctx)
return job_id
