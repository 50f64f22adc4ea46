#!lua flags=allow-oom
--[[
  cleanJobsInSet: delete up to `limit` jobs of one state that are older than
  a cutoff, with all their keys. Bounded per call; the caller repeats.

  KEYS[1] the state's key: completed, failed (zsets scored by finishedOn),
          delayed, prioritized (zsets), wait or paused (lists)
  KEYS[2] events
  KEYS[3] meta
  KEYS[4] prioritized      } the sorted-set states a deleted job must not
  KEYS[5] delayed          } also be in (the one KEYS[1] names is passed
  KEYS[6] completed        } over): deleting its hash would leave the other
  KEYS[7] failed           } state an id without a job
  KEYS[8] waiting-children }
  KEYS[9] wait    } wait and paused only: the list states a deleted job must
  KEYS[10] paused } not also be in (the one KEYS[1] names is passed over),
  KEYS[11] active } read whole by each call (see Cost); only read, so one of
                    another type holds no job

  ARGV[1] key prefix "<prefix>:<queue>:"
  ARGV[2] state name (completed, failed, delayed, prioritized, wait, paused)
  ARGV[3] cutoff (ms): finished (completed/failed) or created (the others,
          by the job's timestamp field) at or before it
  ARGV[4] limit (> 0): the most jobs this call deletes
  ARGV[5] now (ms): when a flow parent this frees enters wait or delayed
  ARGV[6] completed/failed only: ids to pass over first (oldest): the ones
          earlier calls reported as broken, which stay at the front
  ARGV[7] and on (optional, sorted-set states): jobs of the state that a list
          state holds too, as pairs id, that state's name ("wait", "paused",
          "active"), found by listedJobs-4.lua when the clean started: they
          are kept and reported, since deleting their hash would leave the
          list an id without a job

  Returns: {deleted, skipped, looked_at}: the ids deleted (at most `limit`);
  the jobs left where they were because their key is not a job hash, their
  timestamp is not a number (states cleaned by creation time) or another
  state holds them too (a sorted set; for a list, another of KEYS[9..11];
  for a sorted set, a list as ARGV[7] on say), as a flat list id, reason,
  id, reason ... (reasons: includes/jobRead.lua);
  and, for completed/failed, how many ids past the passed-over ones this call
  looked at (fewer than `limit`: nothing older is left). Ids without a hash
  count as old and are deleted. Delayed jobs that are a job scheduler's next
  run are kept. Other states are scanned whole when needed, so jobs kept
  there (too young, a scheduler's, broken) are looked at again by each call.
  Refused with a WRONGTYPE error naming the key, nothing changed, when one of
  KEYS[1..8] has the wrong type.

  Cost (wait and paused): each call reads the other two lists whole, once:
  active holds the running jobs, and of wait and paused one is empty but
  while a queue is paused or resumed. Searching them per job (LPOS) would
  walk a list for every id.

  Memory: runs when Redis is over maxmemory (allow-oom): deleting jobs is how
  an operator frees memory, and a clean writes only one event.

  Events: cleaned (count) when anything was deleted.
  A flow parent freed by a deletion gets waiting (prev = waiting-children)
  or delayed in its own queue's stream.
]]
--- @include "emitEvent"
--- @include "discardJob"
--- @include "callSliced"
--- @include "keyCheck"
--- @include "locateJob"

local set_key = KEYS[1]
local queue_base = ARGV[1]
local state = ARGV[2]
local cutoff = tonumber(ARGV[3])
local limit = tonumber(ARGV[4])
local is_list = state == "wait" or state == "paused"
local is_finished = state == "completed" or state == "failed"
local SCAN_CHUNK = 1000
-- Stand-in written over a list entry before one LREM sweeps them all; it has
-- the legacy marker form, which every reader already skips.
local TOMBSTONE = "0:cleaned"

local others = {}
for index, name in ipairs({"prioritized", "delayed", "completed", "failed", "waiting-children"}) do
  if name ~= state then
    others[#others + 1] = {name = name, key = KEYS[3 + index]}
  end
end
local other_lists = {}
if is_list then
  for index, name in ipairs({"wait", "paused", "active"}) do
    if name ~= state then
      other_lists[#other_lists + 1] = {name = name, key = KEYS[8 + index], list = true}
    end
  end
end
local expected = {set_key, is_list and "list" or "zset", KEYS[2], "stream", KEYS[3], "hash"}
for _, other in ipairs(others) do
  expect(expected, other.key, "zset")
end
local refused = structure_refusal(expected)
if refused then
  return refused
end

local listed = listed_in_args(7)
-- A list's copies in the other lists, read once the list is found to hold
-- something to look at.
local listed_read = false
local function list_copies()
  if not listed_read then
    listed = list_holders(occupied_states(other_lists))
    listed_read = true
  end
end

-- Only the states cleaned by creation time compute with the timestamp.
local check, at = job_checker(is_finished and {} or {"timestamp"}, {}, {"rjk"})
local removed, skipped = {}, {}

-- Sorts one chunk of ids: the ones to delete are handed to `take` (with
-- their position in the chunk) until the limit is reached, broken ones are
-- reported, and too young or scheduler-owned ones are kept silently.
local function sort_chunk(ids, by_age, take)
  local holder = zset_holders(others, ids)
  for position, job_id in ipairs(ids) do
    if #removed >= limit then
      return
    end
    local problem, fields = check(queue_base .. job_id)
    if problem == "missing" then
      problem, fields = nil, {}
    end
    if not skipped_job(skipped, job_id, problem, state, holder, listed) then
      local created = as_number(fields[at.timestamp])
      local young = by_age and created ~= nil and created > cutoff
      local scheduled = state == "delayed" and fields[at.rjk]
      if not young and not scheduled then
        removed[#removed + 1] = job_id
        take(position)
      end
    end
  end
end

local looked_at = 0
if is_finished then
  local ids = redis.call("ZRANGEBYSCORE", set_key, "-inf", cutoff,
    "LIMIT", tonumber(ARGV[6]) or 0, limit)
  looked_at = #ids
  sort_chunk(ids, false, function() end)
  call_sliced("ZREM", set_key, removed)
elseif not is_list then
  local start = 0
  while #removed < limit do
    local chunk = redis.call("ZRANGE", set_key, start, start + SCAN_CHUNK - 1)
    sort_chunk(chunk, true, function() end)
    if #chunk < SCAN_CHUNK then
      break
    end
    start = start + SCAN_CHUNK
  end
  call_sliced("ZREM", set_key, removed)
else
  -- Lists: the oldest jobs sit at the tail, so scan from there. Positions
  -- are collected first and overwritten once the scan is over.
  local positions = {}
  local high = redis.call("LLEN", set_key) - 1
  while high >= 0 and #removed < limit do
    local low = math.max(high - SCAN_CHUNK + 1, 0)
    local chunk = redis.call("LRANGE", set_key, low, high)
    local index_of, ids = {}, {}
    for offset = #chunk, 1, -1 do
      if string.sub(chunk[offset], 1, 2) ~= "0:" then
        ids[#ids + 1] = chunk[offset]
        index_of[#ids] = low + offset - 1
      end
    end
    if #ids > 0 then
      list_copies()
    end
    sort_chunk(ids, true, function(position)
      positions[#positions + 1] = index_of[position]
    end)
    high = low - 1
  end
  for _, index in ipairs(positions) do
    redis.call("LSET", set_key, index, TOMBSTONE)
  end
  if #positions > 0 then
    redis.call("LREM", set_key, 0, TOMBSTONE)
  end
end

for _, job_id in ipairs(removed) do
  discard_job(queue_base, job_id, tonumber(ARGV[5]))
end
if #removed > 0 then
  emit_event(KEYS[2], events_cap(KEYS[3]), "cleaned", "count", #removed)
end
return {removed, skipped, looked_at}
