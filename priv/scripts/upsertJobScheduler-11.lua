#!lua
--[[
  upsertJobScheduler: create or replace a job scheduler (BullMQ 5.x layout)
  and add its next run as a job. Replacing one removes its pending run (when
  no worker has taken it yet) and adds the run of the new definition; the
  iteration count carries over.

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
  ARGV[3]  next run (ms) of a cron pattern, computed by the runtime; "" for every
  ARGV[4]  every (ms), "" for a cron pattern
  ARGV[5]  cron pattern, "" for every
  ARGV[6]  time zone, "" = none
  ARGV[7]  limit (runs), "" = none
  ARGV[8]  start date (ms), "" = none
  ARGV[9]  end date (ms), "" = none
  ARGV[10] template job name
  ARGV[11] template data (JSON text)
  ARGV[12] template opts (JSON text, BullMQ's short names)
  ARGV[13] the run's job opts (JSON: template opts plus `repeat`); the id,
           delay, run time and offset are set here
  ARGV[14] now (ms)

  Returns: {job id of the next run, its delay (ms)}. -10 when a cron run's
  job id is already taken by another job; -11 when both slots of an every
  scheduler (its run and the one after) are taken. Refused with a WRONGTYPE
  error naming the key, nothing changed, when one of the KEYS or the
  scheduler's hash has the wrong type; {"broken", reason} when the pending
  run's job key is no job hash (reasons: includes/keyCheck.lua).

  Memory: refused when Redis is over maxmemory (no allow-oom flag).

  Events: removed (jobId = the replaced pending run, prev = its state); added
  then delayed (jobId, delay = due time) or waiting for the new run.
]]
--- @include "schedulerSteps"

local queue_base = ARGV[1]
local scheduler_id = ARGV[2]
local every = as_number(ARGV[4])
local now = tonumber(ARGV[14])
local repeat_key = KEYS[11]

local definition_key, refused = definition_for_adding(KEYS, scheduler_id)
if refused then
  return refused
end

local prev = as_number(redis.call("ZSCORE", repeat_key, scheduler_id))
local stored = redis.call("HMGET", definition_key, "every", "offset", "ic")

-- The run the caller asked for (a cron pattern's), or the next slot of an
-- every scheduler. A changed `every` starts a new grid.
local run_ms = as_number(ARGV[3])
local offset = nil
local every_changed = false
if every then
  local from = prev
  if prev and as_number(stored[1]) ~= every then
    from = nil
    every_changed = true
  end
  run_ms, offset = every_next_run(from, every, now, 0, as_number(ARGV[8]))
end

-- The pending run of the definition being replaced, unless a worker has it.
local pending_id, found, problem = find_pending_run(queue_base, scheduler_id, prev,
  pending_states(KEYS[5], KEYS[6], KEYS[1], KEYS[2]))
if problem then
  return broken_reply(problem)
end
local replacing = #found > 0
if replacing and every and not every_changed then
  -- Same grid: the new definition takes over the pending run's slot.
  run_ms = prev
end
if replacing and not every_changed and every then
  -- The grid goes on: its offset stays the one the hash keeps.
  offset = as_number(stored[2]) or offset
end

local job_id = iteration_id(scheduler_id, run_ms)
if job_id ~= pending_id or not replacing then
  if redis.call("EXISTS", queue_base .. job_id) == 1 then
    if not every then
      return -10
    end
    run_ms = run_ms + every
    job_id = iteration_id(scheduler_id, run_ms)
    if redis.call("EXISTS", queue_base .. job_id) == 1 then
      return -11
    end
  end
end

-- Every check is done: the writes start here.
local cap = events_cap(KEYS[3])
discard_pending_run(queue_base, pending_id, found, now, KEYS[9], cap)

local fields = {"name", ARGV[10]}
local function keep(field, value)
  if value ~= nil and value ~= "" then
    fields[#fields + 1] = field
    fields[#fields + 1] = value
  end
end
keep("tz", ARGV[6])
keep("limit", ARGV[7])
keep("pattern", ARGV[5])
keep("startDate", ARGV[8])
keep("endDate", ARGV[9])
keep("every", ARGV[4])
if offset then
  keep("offset", string.format("%d", offset))
end
-- An empty template is left out, as BullMQ does: readers take it as {}.
if ARGV[12] ~= "{}" then
  keep("opts", ARGV[12])
end
if ARGV[11] ~= "{}" then
  keep("data", ARGV[11])
end
keep("ic", is_integer_text(stored[3]) and stored[3] or "1")
redis.call("DEL", definition_key)
redis.call("HSET", definition_key, unpack(fields))
redis.call("ZADD", repeat_key, run_ms, scheduler_id)

local delay = math.max(run_ms - now, 0)
local ctx = add_context(KEYS, queue_base)
local opts_json = iteration_opts(ARGV[13], job_id, delay, run_ms, offset)
add_iteration(ctx, scheduler_id, job_id, ARGV[10], ARGV[11], opts_json, now, delay)
return {job_id, delay}
