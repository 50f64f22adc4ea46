#!lua
--[[
  scheduleNextRun: what a worker runs when it takes a job scheduler's run:
  add the scheduler's next run, once. Only the worker holding the run the
  scheduler is waiting for (job id `repeat:<id>:<zset score>`) adds the next
  one, and never when that job id exists already, so two workers (ours or
  BullMQ's, which do the same) cannot add a run twice, and a run added by
  "run now" or left over from a replaced definition adds none.

  KEYS[1]  wait            list
  KEYS[2]  paused          list
  KEYS[3]  meta            hash
  KEYS[4]  id              string, INCR on every add
  KEYS[5]  delayed         zset
  KEYS[6]  prioritized     zset
  KEYS[7]  pc              string, priority counter
  KEYS[8]  active          list
  KEYS[9]  events          stream
  KEYS[10] marker          zset
  KEYS[11] repeat          zset, scheduler id -> next run (ms)

  ARGV[1]  key prefix "<prefix>:<queue>:"
  ARGV[2]  scheduler id
  ARGV[3]  id of the job the worker took (the run that produces the next)
  ARGV[4]  next run (ms) of a cron pattern, computed by the runtime; "" for
           a scheduler that repeats every N ms (the next slot is computed here)
  ARGV[5]  now (ms)
  ARGV[6]  the next run's job opts (JSON: the taken job's, iteration count + 1);
           the id, delay, run time and offset are set here

  Returns: the next run's job id; "" when nothing was added (the scheduler is
  gone, the job is not the run it waits for, or the next run exists already).
  {"broken", reason} when the scheduler's hash cannot be used (reasons:
  "field:ic" the iteration count is not an integer, "field:every" neither a
  number of ms nor a next run given, "field:name" no job name). Refused with
  a WRONGTYPE error naming the key, nothing changed, when one of the KEYS or
  the scheduler's hash has the wrong type.

  Memory: refused when Redis is over maxmemory (no allow-oom flag).

  Events: added then delayed (jobId, delay = due time) or waiting for the
  next run; duplicated (jobId) when the next run exists already.
]]
--- @include "schedulerSteps"

local queue_base = ARGV[1]
local scheduler_id = ARGV[2]
local now = tonumber(ARGV[5])
local repeat_key = KEYS[11]

local definition_key, refused = definition_for_adding(KEYS, scheduler_id)
if refused then
  return refused
end

local prev_text = redis.call("ZSCORE", repeat_key, scheduler_id)
local prev = as_number(prev_text)
if not prev or ARGV[3] ~= iteration_id(scheduler_id, prev) then
  return ""
end

local definition = redis.call("HMGET", definition_key, "name", "data", "every", "startDate",
  "offset", "ic")
if not definition[1] then
  return broken_reply("field:name")
end
if definition[6] and not is_integer_text(definition[6]) then
  return broken_reply("field:ic")
end
local run_ms = as_number(ARGV[4])
local offset = nil
local every = as_number(definition[3])
if every and every > 0 then
  run_ms, offset = every_next_run(prev, every, now, as_number(definition[5]) or 0,
    as_number(definition[4]))
elseif not run_ms then
  return broken_reply("field:every")
end

local job_id = iteration_id(scheduler_id, run_ms)
local cap = events_cap(KEYS[3])
if redis.call("EXISTS", queue_base .. job_id) == 1 then
  emit_event(KEYS[9], cap, "duplicated", "jobId", job_id)
  return ""
end

redis.call("ZADD", repeat_key, run_ms, scheduler_id)
redis.call("HINCRBY", definition_key, "ic", 1)
if offset and not definition[5] then
  redis.call("HSET", definition_key, "offset", string.format("%d", offset))
end
local delay = math.max(run_ms - now, 0)
local ctx = add_context(KEYS, queue_base)
local opts_json = iteration_opts(ARGV[6], job_id, delay, run_ms, offset)
add_iteration(ctx, scheduler_id, job_id, definition[1], definition[2] or "{}", opts_json, now,
  delay)
-- BullMQ's workers read the next run's id from the run that produced it.
local producer_key = queue_base .. ARGV[3]
if key_type(producer_key) == "hash" then
  redis.call("HSET", producer_key, "nrjid", job_id)
end
return job_id
