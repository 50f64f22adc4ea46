#!lua flags=allow-oom
--[[ extendLock: a worker renews the lock of a job it is still processing.

  KEYS[1]  the job's lock "<prefix>:<queue>:<id>:lock" (string)
  KEYS[2]  stalled (set)

  ARGV[1]  token the lock must hold
  ARGV[2]  lock duration (ms)
  ARGV[3]  job id

  Returns 1 when the lock held the token and now lasts ARGV[2] ms again (the
  job also leaves `stalled`: it is alive); 0 when the lock is gone or another
  token holds it.

  A lock of another type (a writer's garbage) holds no token: 0. A stalled
  key of another type is left alone (the stalled check refuses to run on it
  anyway) while the lock is still renewed.

  Memory: runs when Redis is over maxmemory (allow-oom): renewing writes no
  new data, and a worker whose locks lapsed would see its jobs run twice.

  Events: none.
]]

-- pcall: a lock of another type holds no token.
if redis.pcall("GET", KEYS[1]) ~= ARGV[1] then
  return 0
end
local stalled_type = redis.call("TYPE", KEYS[2])["ok"]
redis.call("PEXPIRE", KEYS[1], ARGV[2])
if stalled_type == "set" then
  redis.call("SREM", KEYS[2], ARGV[3])
end
return 1
