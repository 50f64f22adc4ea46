#!lua
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

  Returns {recovered, broken}: the recovered job ids, and the suspects whose
  keys are broken, as a flat list id, reason, id, reason ... (reasons:
  includes/keyCheck.lua): one whose hash is gone ("missing") was dropped
  from active, nothing could run it; the others (e.g. `stc` is not an
  integer) were left in active and are suspects again at the next check.
  Both are empty when another check ran within the interval. Refused with a WRONGTYPE error naming
  the key, nothing changed, when one of the keys it writes has the wrong type.

  Memory: refused when Redis is over maxmemory (no allow-oom flag): stalled
  jobs stay active, with nothing lost, until Redis has room again.

  Events: per recovered job, waiting (jobId, prev=active) then stalled (jobId).
]]

--- @include "readyTarget"
--- @include "emitEvent"
--- @include "keyCheck"

local stalled_key, active_key, check_key = KEYS[1], KEYS[3], KEYS[4]
local queue = {
  wait = KEYS[2], active = KEYS[3], meta = KEYS[5], paused = KEYS[6], marker = KEYS[7],
}
local events_key = KEYS[8]
local max_stalled = tonumber(ARGV[1]) or 1
local base = ARGV[2]

local refused = structure_refusal({
  stalled_key, "set", queue.wait, "list", active_key, "list", queue.meta, "hash",
  queue.paused, "list", queue.marker, "zset", events_key, "stream",
})
if refused then
  return refused
end
if redis.call("EXISTS", check_key) == 1 then
  return {{}, {}}
end
redis.call("SET", check_key, ARGV[3], "PX", ARGV[4])
local cap = events_cap(queue.meta)
redis.call("XTRIM", events_key, "MAXLEN", "~", cap)

-- Jobs scheduled by a repeat rule are never failed for stalling (BullMQ
-- behaves the same): their next run comes from the scheduler anyway.
local function is_repeat_job(raw_opts)
  if not raw_opts then
    return false
  end
  local ok, opts = pcall(cjson.decode, raw_opts)
  return ok and type(opts) == "table" and opts["repeat"] ~= nil
end

local check, at = job_checker({}, {"stc"}, {"opts"})
local recovered, broken = {}, {}

local function recover(job_id, job_key, fields)
  redis.call("LREM", active_key, 1, job_id)
  local count = redis.call("HINCRBY", job_key, "stc", 1)
  if count > max_stalled and not is_repeat_job(fields[at.opts]) then
    redis.call("HSET", job_key, "defa", "job stalled more than allowable limit")
  end
  -- Onto the tail of the ready list, as a lifo job: it runs next.
  push_ready(queue, job_id, 0, true)
  emit_event(events_key, cap, "waiting", "jobId", job_id, "prev", "active")
  emit_event(events_key, cap, "stalled", "jobId", job_id)
  recovered[#recovered + 1] = job_id
end

local suspects = redis.call("SMEMBERS", stalled_key)
redis.call("DEL", stalled_key)
for _, job_id in ipairs(suspects) do
  local job_key = base .. job_id
  -- Renewing the lock or finishing clears a job of suspicion.
  if redis.call("EXISTS", job_key .. ":lock") == 0 and redis.call("LPOS", active_key, job_id) then
    local problem, fields = "missing", nil
    if string.sub(job_id, 1, 2) ~= "0:" then
      problem, fields = check(job_key)
    end
    if problem == "missing" then
      -- A legacy marker, or an id without a hash, stuck in active: drop it.
      redis.call("LREM", active_key, 1, job_id)
      if string.sub(job_id, 1, 2) ~= "0:" then
        broken[#broken + 1] = job_id
        broken[#broken + 1] = problem
      end
    elseif problem then
      broken[#broken + 1] = job_id
      broken[#broken + 1] = problem
    else
      recover(job_id, job_key, fields)
    end
  end
end

-- Everything active now is a suspect for the next check.
local active = redis.call("LRANGE", active_key, 0, -1)
for first = 1, #active, 5000 do
  redis.call("SADD", stalled_key, unpack(active, first, math.min(first + 4999, #active)))
end
return {recovered, broken}
