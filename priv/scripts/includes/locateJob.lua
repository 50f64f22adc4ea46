-- Finding which states hold a job. `states` is an array of {name = <state
-- name>, key = <key>, list = <bool>} (built by job_states); sorted sets come
-- first in callers' arrays because ZSCORE is O(1) while LPOS walks the list.
-- The callers have checked every key's type (keyCheck.lua), so none of these
-- calls can fail.

-- The states kept in lists; every other state is a sorted set.
local LIST_STATES = {wait = true, paused = true, active = true}

-- The `states` array of a script from a flat array name, key, name, key ...
-- in the order they are to be searched.
local function job_states(named_keys)
  local states = {}
  for index = 1, #named_keys, 2 do
    local name = named_keys[index]
    states[#states + 1] = {name = name, key = named_keys[index + 1], list = LIST_STATES[name]}
  end
  return states
end

local function holds(state, job_id)
  if state.list then
    return redis.call("LPOS", state.key, job_id) ~= false
  end
  return redis.call("ZSCORE", state.key, job_id) ~= false
end

-- The states of `states` for which `test(state)` is true, in the order given.
local function states_where(states, test)
  local found = {}
  for _, state in ipairs(states) do
    if test(state) then
      found[#found + 1] = state
    end
  end
  return found
end

-- Notes that `name` holds `job_id` in `holder` (id -> state name), unless
-- a state before it does: the first state in the caller's order names a job
-- held twice.
local function note_holder(holder, job_id, name)
  if holder[job_id] == nil then
    holder[job_id] = name
  end
end

-- Every state holding the job, in the order given: more than one means a
-- writer left the id in two places, which a move must not make worse.
local function states_holding(states, job_id)
  return states_where(states, function(state)
    return holds(state, job_id)
  end)
end

-- The broken-job reason for a job found in several states, naming them.
local function two_states_reason(found)
  local names = {}
  for _, state in ipairs(found) do
    names[#names + 1] = state.name
  end
  return "states:" .. table.concat(names, ",")
end

-- For a batch of ids, which of them a sorted-set state also holds: id ->
-- that state's name. One ZMSCORE per state and slice of ids keeps a bulk
-- move O(batch). List states are not searched (LPOS would walk the list for
-- every id): a bulk action asks listedJobs-4.lua once, before its batches.
local function zset_holders(states, ids)
  local holder = {}
  for _, state in ipairs(states) do
    -- An empty state (most queues leave some unused) holds nothing; a list
    -- state is for list_holders.
    local slices = not state.list and redis.call("EXISTS", state.key) == 1 and #ids or 0
    for first = 1, slices, 1000 do
      local last = math.min(first + 999, #ids)
      local scores = redis.call("ZMSCORE", state.key, unpack(ids, first, last))
      for offset, score in ipairs(scores) do
        if score then
          note_holder(holder, ids[first + offset - 1], state.name)
        end
      end
    end
  end
  return holder
end

-- The states of `states` that hold anything, for a script that only reads
-- them: an empty one is passed over (most queues leave some unused), and so
-- is a key of another type, which holds no job (a script that writes a state
-- refuses that with structure_refusal before its first write).
local function occupied_states(states)
  return states_where(states, function(state)
    local size = redis.pcall(state.list and "LLEN" or "ZCARD", state.key)
    return type(size) == "number" and size > 0
  end)
end

-- Which ids the list states of `states` hold: id -> that state's name, each
-- list read whole (LRANGE), so the cost is their length, not a walk of a
-- list per id (LPOS). Meant for lists that are short while the caller works:
-- active (the running jobs) and, beside the one being deleted from, the
-- other of wait and paused (pausing renames one into the other).
local function list_holders(states)
  local holder = {}
  for _, state in ipairs(states) do
    if state.list then
      for _, job_id in ipairs(redis.call("LRANGE", state.key, 0, -1)) do
        note_holder(holder, job_id, state.name)
      end
    end
  end
  return holder
end

-- The jobs a bulk action's caller found in a list state too (listedJobs-4.lua),
-- passed as pairs id, that state's name from ARGV[first] on: id -> name.
local function listed_in_args(first)
  local listed = {}
  for index = first, #ARGV - 1, 2 do
    listed[ARGV[index]] = ARGV[index + 1]
  end
  return listed
end

-- Whether a batch leaves `job_id`, of state `state`, where it is: when the
-- job check found a `problem`, or another state holds the job too (`holder`:
-- zset_holders's answer; `listed`: listed_in_args's, or nil), the job is
-- reported in `skipped` (a flat list id, reason) and true is answered.
local function skipped_job(skipped, job_id, problem, state, holder, listed)
  local also = holder[job_id] or (listed and listed[job_id])
  if not problem and also then
    problem = "states:" .. state .. "," .. also
  end
  if not problem then
    return false
  end
  skipped[#skipped + 1] = job_id
  skipped[#skipped + 1] = problem
  return true
end

local function take_job_out(state, job_id)
  if state.list then
    redis.call("LREM", state.key, 0, job_id)
  else
    redis.call("ZREM", state.key, job_id)
  end
end
