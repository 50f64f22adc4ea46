--- @include "numbers"
--- @include "locateJob"
--- @include "discardJob"
--- @include "addJobSteps"

-- Job schedulers, BullMQ 5.x layout (docs/protocol.md, "Job schedulers"):
-- the `repeat` zset scores each scheduler id with its next run (ms), the hash
-- `repeat:<id>` holds its definition, and the run itself is a job with id
-- `repeat:<id>:<run ms>` whose hash names the scheduler in `rjk`.

local function scheduler_key(repeat_key, scheduler_id)
  return repeat_key .. ":" .. scheduler_id
end

-- The scripts that add a scheduler's run (upsertJobScheduler,
-- scheduleNextRun, runJobScheduler) take the ten keys of an add
-- (addJobSteps.lua) and then `repeat`, the eleventh. Answers the scheduler's
-- definition key and the refusal when any of those or the definition has
-- the wrong type (nil when none): everything the script may write, checked
-- before its first write.
local function definition_for_adding(keys, scheduler_id)
  local definition_key = scheduler_key(keys[11], scheduler_id)
  return definition_key,
    add_refusal(keys) or structure_refusal({keys[11], "zset", definition_key, "hash"})
end

-- Run times are whole milliseconds; "%d" keeps 13 digits whole where
-- tostring would switch to an exponent on bigger numbers.
local function iteration_id(scheduler_id, run_ms)
  return "repeat:" .. scheduler_id .. ":" .. string.format("%d", run_ms)
end

-- The next run of a scheduler that repeats every `every` ms. The first run
-- is now (or the start date, when later). Later runs keep the grid the first
-- one set: previous run + every; a worker that comes back after missing runs
-- goes on from the next slot of the grid (plus `offset`) instead of running
-- every missed one at once. Answers the run and the offset of the grid (the
-- first run's distance from a multiple of `every`, kept in the hash).
local function every_next_run(prev_ms, every, now, offset, start_ms)
  local run
  if prev_ms == nil then
    run = now
    if start_ms and start_ms > now then
      run = start_ms
    end
  else
    run = prev_ms + every
    if run < now then
      run = math.floor(now / every) * every + every + (offset or 0)
    end
  end
  if not offset or offset == 0 then
    offset = run - math.floor(run / every) * every
  end
  return math.floor(run), math.floor(offset)
end

-- The opts JSON the run's job stores: the caller's (template options plus
-- `repeat`, with the iteration count), completed with what only this script
-- knows: the id, the delay, the run time (BullMQ's workers read `prevMillis`
-- and `repeat` to schedule the run after) and the grid's offset.
local function iteration_opts(opts_json, job_id, delay, run_ms, offset)
  local ok, opts = pcall(cjson.decode, opts_json)
  if not ok or type(opts) ~= "table" then
    opts = {}
  end
  opts["jobId"] = job_id
  opts["delay"] = delay
  opts["prevMillis"] = run_ms
  if offset and type(opts["repeat"]) == "table" then
    opts["repeat"]["offset"] = offset
  end
  return cjson.encode(opts)
end

-- Priority and lifo of a template's options (opts JSON as stored); a run
-- that is due at once goes where an added job with these options would.
local function ready_options(opts)
  local priority = as_number(type(opts) == "table" and opts["priority"] or nil) or 0
  if priority < 0 or priority > 2097152 then
    priority = 0
  end
  return math.floor(priority), type(opts) == "table" and opts["lifo"] == true
end

-- Adds a run's job through the steps of addJob (ctx from add_context) and
-- names its scheduler in `rjk`. The caller has made sure `job_id` is free.
local function add_iteration(ctx, scheduler_id, job_id, name, data, opts_json, now, delay)
  local _, opts = pcall(cjson.decode, opts_json)
  local priority, lifo = ready_options(opts)
  add_one_job(ctx, {job_id, name, data, opts_json, now, delay, priority, lifo and "1" or "0",
    "", 0, "", ""}, 1)
  redis.call("HSET", ctx.prefix .. job_id, "rjk", scheduler_id)
  finish_adds(ctx)
end

-- The states a scheduler's pending run can wait in before a worker takes it.
local function pending_states(delayed, prioritized, wait, paused)
  return job_states({"delayed", delayed, "prioritized", prioritized, "wait", wait,
    "paused", paused})
end

-- The pending run of a scheduler whose next run is `run_ms`: its job id, the
-- states holding it (none when a worker has taken it or it is gone), and why
-- it cannot be deleted (its key is no job hash, or it sits in two states), or
-- nil. A scheduler with no next run (`run_ms` nil) has none: "", {}, nil.
-- Asked before the caller's first write.
local function find_pending_run(queue_base, scheduler_id, run_ms, states)
  if not run_ms then
    return "", {}, nil
  end
  local job_id = iteration_id(scheduler_id, run_ms)
  local found = states_holding(states, job_id)
  local problem = job_checker({}, {})(queue_base .. job_id)
  if problem == "missing" then
    problem = nil
  end
  if not problem and #found > 1 then
    problem = two_states_reason(found)
  end
  return job_id, found, problem
end

-- A legacy key's pending run: the first of `candidates` (the ids it may have,
-- worked out by the runtime: its id is a checksum Lua cannot compute) that
-- sits in one of `states` and whose hash names this key in `rjk`, so that no
-- other job is ever taken for it. Same answers as find_pending_run.
local function find_legacy_pending_run(queue_base, legacy_key, candidates, states)
  for _, job_id in ipairs(candidates) do
    local found = states_holding(states, job_id)
    if #found > 0 and redis.call("TYPE", queue_base .. job_id)["ok"] == "hash"
        and redis.call("HGET", queue_base .. job_id, "rjk") == legacy_key then
      local problem = job_checker({}, {})(queue_base .. job_id)
      if not problem and #found > 1 then
        problem = two_states_reason(found)
      end
      return job_id, found, problem
    end
  end
  return "", {}, nil
end

-- Deletes a pending run found by states_holding (checked with
-- pending_run_problem): out of its state, its keys gone, a `removed` event.
local function discard_pending_run(queue_base, job_id, found, now, events_key, cap)
  if #found == 0 then
    return false
  end
  take_job_out(found[1], job_id)
  discard_job(queue_base, job_id, now)
  emit_event(events_key, cap, "removed", "jobId", job_id, "prev", found[1].name)
  return true
end
