#!lua
--[[
  failJob: an admin fails a job that has not finished: from wait, paused,
  prioritized, delayed or active to failed. An active job's lock is deleted
  (and its stalled mark dropped), so its worker's own finish later gets -2 and
  cannot overwrite the admin's verdict.

  KEYS[1]  wait
  KEYS[2]  paused
  KEYS[3]  active
  KEYS[4]  prioritized
  KEYS[5]  delayed
  KEYS[6]  failed
  KEYS[7]  stalled
  KEYS[8]  meta
  KEYS[9]  events
  KEYS[10] completed         } looked at only: a job in one of these as well
  KEYS[11] waiting-children  } is in two states and is left alone

  ARGV[1] key prefix "<prefix>:<queue>:"
  ARGV[2] job id
  ARGV[3] failed reason (plain text)
  ARGV[4] now (ms): finishedOn and the failed score

  Returns: 0 done; -1 the job hash is gone; -3 the job already finished
  (completed or failed) or is in no state it can be failed from;
  {"broken", reason} the job's keys are broken or several states hold it
  (reasons: includes/keyCheck.lua), and it was left where it was. Refused
  with a WRONGTYPE error naming the key when one of the KEYS has the wrong
  type. In every refusal nothing is changed.

  Memory: refused when Redis is over maxmemory (no allow-oom flag).

  Events: failed (jobId, failedReason, prev = the state it left:
  wait, paused, prioritized, delayed or active).
  Sets failedReason, finishedOn and appends the reason to stacktrace (capped
  by opts.stackTraceLimit); attempt counters are not touched.
]]
--- @include "emitEvent"
--- @include "locateJob"
--- @include "dedupRelease"
--- @include "keyCheck"
--- @include "jobInState"

local queue_base = ARGV[1]
local job_id = ARGV[2]
local reason = ARGV[3]
local job_key = queue_base .. job_id

local refused = structure_refusal({
  KEYS[1], "list", KEYS[2], "list", KEYS[3], "list", KEYS[4], "zset",
  KEYS[5], "zset", KEYS[6], "zset", KEYS[7], "set", KEYS[8], "hash",
  KEYS[9], "stream", KEYS[10], "zset", KEYS[11], "zset",
})
if refused then
  return refused
end
-- A job that finished, or waits for its children, is not failed by hand.
local job_refused, state = job_in_state(job_key, job_id, job_states({
  "prioritized", KEYS[4], "delayed", KEYS[5], "completed", KEYS[10], "failed", KEYS[6],
  "waiting-children", KEYS[11], "active", KEYS[3], "wait", KEYS[1], "paused", KEYS[2],
}), {"wait", "paused", "prioritized", "delayed", "active"})
if job_refused then
  return job_refused
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
local limit = ok_opts and type(opts) == "table" and as_number(opts["stackTraceLimit"])
if limit and limit >= 0 then
  while #trace > limit do
    table.remove(trace, 1)
  end
end
-- Encoding fails on what decoding accepts (1e999 decodes to inf): then the
-- trace starts afresh, before anything is written.
-- An empty Lua table encodes as "{}", so no lines is spelled out.
local encoded, trace_json = pcall(cjson.encode, trace)
if #trace == 0 then
  trace_json = "[]"
elseif not encoded then
  trace_json = cjson.encode({reason})
end

take_job_out(state, job_id)
if state.name == "active" then
  redis.call("DEL", job_key .. ":lock")
  redis.call("SREM", KEYS[7], job_id)
end

redis.call("HSET", job_key, "failedReason", reason, "finishedOn", ARGV[4], "stacktrace", trace_json)
redis.call("ZADD", KEYS[6], ARGV[4], job_id)
release_dedup_key(queue_base, job_key, job_id)
emit_event(KEYS[9], events_cap(KEYS[8]), "failed", "jobId", job_id,
  "failedReason", reason, "prev", state.name)
return 0
