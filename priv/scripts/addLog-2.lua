#!lua
--[[
  addLog: append a line to a job's log, keeping only the newest lines when
  asked.

  KEYS[1] job key
  KEYS[2] the job's logs list

  ARGV[1] log line
  ARGV[2] lines to keep (0 = all)

  Returns: the number of log lines after the append; -1 the job hash is gone;
  {"broken", reason} the job's key is not a job hash or its logs key is not a
  list (reasons: includes/keyCheck.lua), and nothing was written.

  Memory: refused when Redis is over maxmemory (no allow-oom flag).

  Events: none.
]]

--- @include "keyCheck"

local job_refused = job_refusal(KEYS[1], {})
if job_refused then
  return job_refused
end
local logs_type = key_type(KEYS[2])
if logs_type ~= "none" and logs_type ~= "list" then
  return broken_reply("key:logs")
end
local count = redis.call("RPUSH", KEYS[2], ARGV[1])
local keep = tonumber(ARGV[2]) or 0
if keep > 0 and count > keep then
  redis.call("LTRIM", KEYS[2], -keep, -1)
  return keep
end
return count
