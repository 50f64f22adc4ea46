--[[
  cleanJobsInSet: delete up to `limit` jobs of one state that are older than
  a cutoff, with all their keys. Bounded per call; the caller repeats.

  KEYS[1] the state's key: completed, failed (zsets scored by finishedOn),
          delayed, prioritized (zsets), wait or paused (lists)
  KEYS[2] events
  KEYS[3] meta

  ARGV[1] key prefix "<prefix>:<queue>:"
  ARGV[2] state name (completed, failed, delayed, prioritized, wait, paused)
  ARGV[3] cutoff (ms): finished (completed/failed) or created (the others,
          by the job's timestamp field) at or before it
  ARGV[4] limit (> 0): the most jobs this call deletes
  ARGV[5] now (ms): when a flow parent this frees enters wait or delayed

  Returns: the ids deleted (at most `limit`). Ids without a hash count as
  old. Delayed jobs that are a job scheduler's next run are kept.

  Events: cleaned (count) when anything was deleted.
  A flow parent freed by a deletion gets waiting (prev = waiting-children)
  or delayed in its own queue's stream.
]]
--- @include "emitEvent"
--- @include "discardJob"
--- @include "callSliced"

local set_key = KEYS[1]
local queue_base = ARGV[1]
local state = ARGV[2]
local cutoff = tonumber(ARGV[3])
local limit = tonumber(ARGV[4])
local SCAN_CHUNK = 1000
-- Stand-in written over a list entry before one LREM sweeps them all; it has
-- the legacy marker form, which every reader already skips.
local TOMBSTONE = "0:cleaned"

local function is_old(job_id)
  local created = tonumber(redis.call("HGET", queue_base .. job_id, "timestamp"))
  return created == nil or created <= cutoff
end

local function kept_for_scheduler(job_id)
  return state == "delayed" and redis.call("HEXISTS", queue_base .. job_id, "rjk") == 1
end

local removed = {}
if state == "completed" or state == "failed" then
  removed = redis.call("ZRANGEBYSCORE", set_key, "-inf", cutoff, "LIMIT", 0, limit)
  call_sliced("ZREM", set_key, removed)
elseif state == "delayed" or state == "prioritized" then
  local start = 0
  while #removed < limit do
    local chunk = redis.call("ZRANGE", set_key, start, start + SCAN_CHUNK - 1)
    for _, job_id in ipairs(chunk) do
      if #removed < limit and is_old(job_id) and not kept_for_scheduler(job_id) then
        removed[#removed + 1] = job_id
      end
    end
    if #chunk < SCAN_CHUNK then
      break
    end
    start = start + SCAN_CHUNK
  end
  call_sliced("ZREM", set_key, removed)
else
  -- Lists: the oldest jobs sit at the tail, so scan from there.
  local length = redis.call("LLEN", set_key)
  local high = length - 1
  while high >= 0 and #removed < limit do
    local low = math.max(high - SCAN_CHUNK + 1, 0)
    local chunk = redis.call("LRANGE", set_key, low, high)
    for offset = #chunk, 1, -1 do
      local job_id = chunk[offset]
      if #removed < limit and string.sub(job_id, 1, 2) ~= "0:" and is_old(job_id) then
        removed[#removed + 1] = job_id
        redis.call("LSET", set_key, low + offset - 1, TOMBSTONE)
      end
    end
    high = low - 1
  end
  if #removed > 0 then
    redis.call("LREM", set_key, 0, TOMBSTONE)
  end
end

for _, job_id in ipairs(removed) do
  discard_job(queue_base, job_id, tonumber(ARGV[5]))
end
if #removed > 0 then
  emit_event(KEYS[2], events_cap(KEYS[3]), "cleaned", "count", #removed)
end
return removed
