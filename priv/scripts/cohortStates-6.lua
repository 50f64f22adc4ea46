#!lua flags=no-writes
--[[
  cohortStates: where each job of a batch is now, read-only. The dashboard
  asks it about the jobs an admin action moved ("what became of my retry"),
  a bounded batch per call, only while someone looks.

  KEYS[1]  a state key, sorted set or list (the caller's order: every sorted-set
  KEYS[2]  state and the active list, as queues/read/job.py probes a job directly;
  KEYS[3]  the ready lists, which may hold millions, are never walked)
  KEYS[4]    "
  KEYS[5]    "
  KEYS[6]    "

  ARGV[1] key prefix "<prefix>:<queue>:"
  ARGV[2] bytes of failedReason to return for a job found in the failed set
  ARGV[3] which KEYS entry is the failed set (its jobs' reasons are returned)
  ARGV[4..n] job ids

  Returns: per id, in ARGV order, two values: where it is (the number of the
  KEYS entry holding it; 0 = its hash exists but none of the KEYS holds it,
  which is a ready list, wait or paused, as those are not walked; -1 = it has
  no hash: removed) and, for a job in the failed set, the first ARGV[2] bytes
  of its failedReason ("" otherwise). A key of the wrong type (another
  writer's garbage) holds nothing.
  A list is read once per call (LRANGE: the active list is as long as the
  workers' concurrency), a sorted set by ZSCORE per id.

  Memory: read-only (no-writes), so it runs when Redis is over maxmemory.

  Events: none.
]]

local base = ARGV[1]
local reason_bytes = tonumber(ARGV[2]) or 0
local failed_at = tonumber(ARGV[3]) or 0

local probes = {}
for index, key in ipairs(KEYS) do
  local kind = redis.call("TYPE", key)["ok"]
  if kind == "zset" then
    probes[index] = function(job_id) return redis.call("ZSCORE", key, job_id) end
  elseif kind == "list" then
    local members = {}
    for _, job_id in ipairs(redis.call("LRANGE", key, 0, -1)) do
      members[job_id] = true
    end
    probes[index] = function(job_id) return members[job_id] end
  else
    probes[index] = function() return false end
  end
end

local answer = {}
for position = 4, #ARGV do
  local job_id = ARGV[position]
  local where, reason = -1, ""
  if redis.call("EXISTS", base .. job_id) == 1 then
    where = 0
    for index = 1, #KEYS do
      if probes[index](job_id) then
        where = index
        break
      end
    end
    if where == failed_at and reason_bytes > 0 then
      local raw = redis.pcall("HGET", base .. job_id, "failedReason")
      if type(raw) == "string" then
        reason = string.sub(raw, 1, reason_bytes)
      end
    end
  end
  answer[#answer + 1] = where
  answer[#answer + 1] = reason
end
return answer
