#!lua flags=allow-oom
--[[
  drain: delete the jobs that have not started: wait, paused, prioritized
  and, when asked, delayed (a job scheduler's next run is kept). Active,
  completed and failed jobs stay. Bounded: at most `batch` jobs per call; the
  caller repeats while the first answer is 1.

  KEYS[1] wait
  KEYS[2] paused
  KEYS[3] prioritized
  KEYS[4] delayed
  KEYS[5] pc
  KEYS[6] meta
  KEYS[7] events
  KEYS[8] active            } the other states a drained job must not also
  KEYS[9] completed         } be in (nor wait, paused, prioritized and
  KEYS[10] failed           } delayed, beside the one it is taken from):
  KEYS[11] waiting-children } deleting its hash would leave that state an
                              id without a job

  ARGV[1] key prefix "<prefix>:<queue>:"
  ARGV[2] "1" to drain delayed jobs too
  ARGV[3] batch size (> 0)
  ARGV[4] now (ms): when a flow parent this frees enters wait or delayed

  Returns: {more, skipped}: more is 1 when the batch was used up (there may
  be more), 0 when the queue is drained; skipped lists the jobs left where
  they were because their key is not a job hash or another state holds them
  too ("states:wait,failed": a job in two states is broken, and deleted it
  would leave the other an id without a job), as a flat list id, reason,
  id, reason ... (reasons: includes/jobRead.lua; kept ones are looked at
  again by each call, so a caller sees them more than once). Refused with a
  WRONGTYPE error naming the key, nothing changed, when one of KEYS[1..7]
  has the wrong type; KEYS[8..11] are only read, and one of another type
  holds no job.

  Cost: each batch asks the sorted sets about its ids (ZMSCORE), and each
  call reads the other lists whole (active: the running jobs; of wait and
  paused, one is empty but while a queue is paused or resumed).

  Memory: runs when Redis is over maxmemory (allow-oom): deleting jobs is how
  an operator frees memory.

  Flows: a parent of this queue whose last pending child the drain deletes
  is deleted too, as BullMQ's drain does (and its own parent the same way):
  it waited for work that will never run. Released instead, it would enter
  the wait list just drained, or not, depending on where a batch ended. A
  parent in another queue is released there as when a child is removed; one
  another state of this queue also holds is broken and left where it is.

  Events: drained (no fields) from the call that finishes the drain.
  A parent freed in another queue gets waiting (prev = waiting-children)
  or delayed in its own queue's stream.
]]
--- @include "emitEvent"
--- @include "discardJob"
--- @include "takeBatch"
--- @include "keyCheck"
--- @include "locateJob"

local queue_base = ARGV[1]
local budget = tonumber(ARGV[3])
local now = tonumber(ARGV[4])

local refused = structure_refusal({
  KEYS[1], "list", KEYS[2], "list", KEYS[3], "zset", KEYS[4], "zset",
  KEYS[6], "hash", KEYS[7], "stream",
})
if refused then
  return refused
end

local STATES = job_states({
  "wait", KEYS[1], "paused", KEYS[2], "prioritized", KEYS[3], "delayed", KEYS[4],
  "active", KEYS[8], "completed", KEYS[9], "failed", KEYS[10], "waiting-children", KEYS[11],
})

local check, at = job_checker({}, {}, {"rjk"})
local skipped = {}

-- An id without a hash is simply deleted; a key that is not a job hash is
-- not (it may be another structure), nor is a job another state holds too,
-- and a scheduler's next run stays.
local function keep(job_id, drained, holder, keep_scheduled)
  local problem, fields = check(queue_base .. job_id)
  if problem == "missing" then
    return nil
  end
  if problem then
    return problem
  end
  local also = holder.sets[job_id] or holder.lists[job_id]
  if also then
    return "states:" .. drained .. "," .. also
  end
  return keep_scheduled and fields[at.rjk] and true or nil
end

-- A freed parent of this queue also held by one of these states is broken
-- (a writer left it in two places) and stays where it is: deleting its hash
-- would leave that state an id without a job. The sorted sets and active
-- (its running jobs, a short list) are asked; wait and paused are not (LPOS
-- would walk the lists being drained): a parent listed there is a job the
-- drain deletes anyway. A key of another type holds no job (occupied_states).
local PARENT_ELSEWHERE = job_states({
  "prioritized", KEYS[3], "delayed", KEYS[4], "completed", KEYS[9], "failed", KEYS[10],
  "active", KEYS[8],
})

local function drop_freed_parent(parent, at_time)
  if parent.base ~= queue_base then
    release_parent(parent, at_time)
  elseif #states_holding(occupied_states(PARENT_ELSEWHERE), parent.id) == 0
      and redis.call("ZREM", KEYS[11], parent.id) == 1 then
    discard_job(queue_base, parent.id, at_time, drop_freed_parent)
  end
end

local function drain_state(state, keep_scheduled)
  if budget <= 0 then
    return
  end
  -- Read after the states drained before this one: what they still hold
  -- is what they kept.
  local others = {}
  for _, other in ipairs(STATES) do
    if other.name ~= state.name then
      others[#others + 1] = other
    end
  end
  others = occupied_states(others)
  local holder = {lists = list_holders(others)}
  local ids = take_batch(state.key, state.list, budget, function(job_id)
    return keep(job_id, state.name, holder, keep_scheduled)
  end, skipped, function(chunk)
    holder.sets = zset_holders(others, chunk)
  end)
  for _, job_id in ipairs(ids) do
    discard_job(queue_base, job_id, now, drop_freed_parent)
  end
  budget = budget - #ids
end

-- Every id is judged as its state's batch is taken, before that batch's
-- first write; nothing judged afterwards can fail.
drain_state(STATES[1], false)
drain_state(STATES[2], false)
drain_state(STATES[3], false)
if ARGV[2] == "1" then
  drain_state(STATES[4], true)
end

if budget <= 0 then
  return {1, skipped}
end
redis.call("DEL", KEYS[5])
emit_event(KEYS[7], events_cap(KEYS[6]), "drained")
return {0, skipped}
