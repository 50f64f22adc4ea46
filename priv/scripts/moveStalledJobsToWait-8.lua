--[[ moveStalledJobsToWait: recover jobs whose worker died (lock expired).

  KEYS[1]  stalled       (set)
  KEYS[2]  wait          (list)
  KEYS[3]  active        (list)
  KEYS[4]  stalled-check (string mutex)
  KEYS[5]  meta          (hash)
  KEYS[6]  paused        (list)
  KEYS[7]  marker        (zset)
  KEYS[8]  events        (stream)

  ARGV[1]  max stalled count (a job recovered more often than this fails)
  ARGV[2]  key prefix "<prefix>:<queue>:"
  ARGV[3]  now (ms)
  ARGV[4]  stalled check interval (ms)

  A job is recovered when it was in `stalled` at the previous check (every
  active id is put there) and still has no lock now: renewing the lock or
  finishing takes a job out of `stalled`. Recovered jobs go to the tail of
  wait (paused while the queue is paused) so they run next; `stc` counts the
  recoveries and, beyond the max, `defa` marks a deferred failure that the
  next pick-up carries out. Only one check runs per interval, whichever
  worker gets the mutex.

  Returns the list of recovered job ids ({} when another check ran within
  the interval).

  Events: per recovered job, waiting (jobId, prev=active) then stalled (jobId).
]]

--- @include "readyTarget"
--- @include "emitEvent"

local stalled_key, active_key, check_key = KEYS[1], KEYS[3], KEYS[4]
local queue = {
  wait = KEYS[2], active = KEYS[3], meta = KEYS[5], paused = KEYS[6], marker = KEYS[7],
}
local events_key = KEYS[8]
local max_stalled = tonumber(ARGV[1]) or 1
local base = ARGV[2]

if redis.call("EXISTS", check_key) == 1 then
  return {}
end
redis.call("SET", check_key, ARGV[3], "PX", ARGV[4])
local cap = events_cap(queue.meta)
redis.call("XTRIM", events_key, "MAXLEN", "~", cap)

-- Jobs scheduled by a repeat rule are never failed for stalling (BullMQ
-- behaves the same): their next run comes from the scheduler anyway.
local function is_repeat_job(job_key)
  local raw = redis.call("HGET", job_key, "opts")
  if not raw then
    return false
  end
  local ok, opts = pcall(cjson.decode, raw)
  return ok and type(opts) == "table" and opts["repeat"] ~= nil
end

local recovered = {}
local suspects = redis.call("SMEMBERS", stalled_key)
redis.call("DEL", stalled_key)
for _, job_id in ipairs(suspects) do
  if string.sub(job_id, 1, 2) == "0:" then
    -- A legacy marker stuck in active: just drop it.
    redis.call("LREM", active_key, 1, job_id)
  else
    local job_key = base .. job_id
    if redis.call("EXISTS", job_key .. ":lock") == 0
        and redis.call("LREM", active_key, 1, job_id) > 0 then
      local count = redis.call("HINCRBY", job_key, "stc", 1)
      if count > max_stalled and not is_repeat_job(job_key) then
        redis.call("HSET", job_key, "defa", "job stalled more than allowable limit")
      end
      local list, wake = ready_list(queue)
      redis.call("RPUSH", list, job_id)
      if wake then
        wake_workers(queue.marker)
      end
      emit_event(events_key, cap, "waiting", "jobId", job_id, "prev", "active")
      emit_event(events_key, cap, "stalled", "jobId", job_id)
      recovered[#recovered + 1] = job_id
    end
  end
end

-- Everything active now is a suspect for the next check.
local active = redis.call("LRANGE", active_key, 0, -1)
for first = 1, #active, 5000 do
  redis.call("SADD", stalled_key, unpack(active, first, math.min(first + 4999, #active)))
end
return recovered
