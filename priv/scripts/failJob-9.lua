--[[
  failJob: an admin fails a job that has not finished: from wait, paused,
  prioritized, delayed or active to failed. An active job's lock is deleted
  (and its stalled mark dropped), so its worker's own finish later gets -2 and
  cannot overwrite the admin's verdict.

  KEYS[1] wait
  KEYS[2] paused
  KEYS[3] active
  KEYS[4] prioritized
  KEYS[5] delayed
  KEYS[6] failed
  KEYS[7] stalled
  KEYS[8] meta
  KEYS[9] events

  ARGV[1] key prefix "<prefix>:<queue>:"
  ARGV[2] job id
  ARGV[3] failed reason (plain text)
  ARGV[4] now (ms): finishedOn and the failed score

  Returns: 0 done; -1 the job hash is gone; -3 the job already finished
  (completed or failed) or is in no state it can be failed from.

  Events: failed (jobId, failedReason, prev = the state it left:
  wait, paused, prioritized, delayed or active).
  Sets failedReason, finishedOn and appends the reason to stacktrace (capped
  by opts.stackTraceLimit); attempt counters are not touched.
]]
--- @include "emitEvent"
--- @include "locateJob"
--- @include "dedupRelease"

local queue_base = ARGV[1]
local job_id = ARGV[2]
local reason = ARGV[3]
local job_key = queue_base .. job_id

if redis.call("EXISTS", job_key) == 0 then
  return -1
end
local state = locate_job({
  {name = "prioritized", key = KEYS[4]},
  {name = "delayed", key = KEYS[5]},
  {name = "active", key = KEYS[3], list = true},
  {name = "wait", key = KEYS[1], list = true},
  {name = "paused", key = KEYS[2], list = true},
}, job_id)
if not state then
  return -3
end
take_job_out(state, job_id)
if state.name == "active" then
  redis.call("DEL", job_key .. ":lock")
  redis.call("SREM", KEYS[7], job_id)
end

-- Readers tolerate anything in these fields, so a malformed one is replaced
-- rather than allowed to make the admin's action fail.
local raw = redis.call("HMGET", job_key, "stacktrace", "opts")
local ok, trace = pcall(cjson.decode, raw[1] or "[]")
if not ok or type(trace) ~= "table" then
  trace = {}
end
trace[#trace + 1] = reason
local ok_opts, opts = pcall(cjson.decode, raw[2] or "{}")
local limit = ok_opts and type(opts) == "table" and tonumber(opts["stackTraceLimit"])
if limit and limit >= 0 then
  while #trace > limit do
    table.remove(trace, 1)
  end
end
local trace_json = #trace > 0 and cjson.encode(trace) or "[]"

redis.call("HSET", job_key, "failedReason", reason, "finishedOn", ARGV[4], "stacktrace", trace_json)
redis.call("ZADD", KEYS[6], ARGV[4], job_id)
release_dedup_key(queue_base, job_key, job_id)
emit_event(KEYS[9], events_cap(KEYS[8]), "failed", "jobId", job_id,
  "failedReason", reason, "prev", state.name)
return 0
