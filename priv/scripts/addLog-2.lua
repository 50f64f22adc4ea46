--[[
  addLog: append a line to a job's log, keeping only the newest lines when
  asked.

  KEYS[1] job key
  KEYS[2] the job's logs list

  ARGV[1] log line
  ARGV[2] lines to keep (0 = all)

  Returns: the number of log lines after the append; -1 the job hash is gone.

  Events: none.
]]

if redis.call("EXISTS", KEYS[1]) == 0 then
  return -1
end
local count = redis.call("RPUSH", KEYS[2], ARGV[1])
local keep = tonumber(ARGV[2]) or 0
if keep > 0 and count > keep then
  redis.call("LTRIM", KEYS[2], -keep, -1)
  return keep
end
return count
