#!lua
--[[ moveToDelayed: an active job waits before its next attempt (retry with
  backoff, or a job postponing itself).

  KEYS[1]  marker      (zset)
  KEYS[2]  active      (list)
  KEYS[3]  prioritized (zset; part of the fixed arity, not touched here)
  KEYS[4]  delayed     (zset)
  KEYS[5]  job key "<prefix>:<queue>:<id>" (hash)
  KEYS[6]  events      (stream)
  KEYS[7]  meta        (hash)
  KEYS[8]  stalled     (set)

  ARGV[1]  key prefix "<prefix>:<queue>:"
  ARGV[2]  now (ms)
  ARGV[3]  job id
  ARGV[4]  lock token ("0" = no lock check)
  ARGV[5]  delay (ms, relative to now)
  ARGV[6]  skip attempt: "1" leaves `atm` as is, "0" counts the attempt
  ARGV[7]  optional msgpack array {field, value, ...} to set on the job

  Returns 0, or -1 (no such job), -2 (lock gone), -6 (lock held by another
  token), -3 (job not in active), {"broken", reason} (the job's keys are
  broken, e.g. `atm` is not an integer; reasons: includes/keyCheck.lua), or
  a WRONGTYPE error naming a key of the wrong type. Every check runs before
  the first write, so a refused call changes nothing.

  Memory: refused when Redis is over maxmemory (no allow-oom flag): the
  worker keeps the job and its lock and tries again until Redis has room.

  Events: delayed (jobId, delay = due time in ms).
]]

--- @include "lockCheck"
--- @include "jobFields"
--- @include "emitEvent"
--- @include "delayedScore"
--- @include "wakeWorkers"
--- @include "keyCheck"

local marker_key, active_key, delayed_key = KEYS[1], KEYS[2], KEYS[4]
local job_key, events_key, meta_key, stalled_key = KEYS[5], KEYS[6], KEYS[7], KEYS[8]
local now, job_id, token = tonumber(ARGV[2]), ARGV[3], ARGV[4]
local delay = math.max(math.floor(tonumber(ARGV[5]) or 0), 0)

local refused_structure = structure_refusal({
  marker_key, "zset", active_key, "list", delayed_key, "zset",
  events_key, "stream", meta_key, "hash", stalled_key, "set",
})
if refused_structure then
  return refused_structure
end
local job_refused = job_refusal(job_key, {"atm"})
if job_refused then
  return job_refused
end
local refused = leave_active(active_key, stalled_key, job_key, job_id, token)
if refused ~= 0 then
  return refused
end
set_packed_fields(job_key, ARGV[7])
if ARGV[6] ~= "1" then
  redis.call("HINCRBY", job_key, "atm", 1)
end
redis.call("HSET", job_key, "delay", delay)

local due = now + delay
redis.call("ZADD", delayed_key, delayed_score(delayed_key, due), job_id)
emit_event(events_key, events_cap(meta_key), "delayed", "jobId", job_id, "delay", due)
arm_delayed_marker(marker_key, delayed_key)
return 0
