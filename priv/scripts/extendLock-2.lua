--[[ extendLock: a worker renews the lock of a job it is still processing.

  KEYS[1]  the job's lock "<prefix>:<queue>:<id>:lock" (string)
  KEYS[2]  stalled (set)

  ARGV[1]  token the lock must hold
  ARGV[2]  lock duration (ms)
  ARGV[3]  job id

  Returns 1 when the lock held the token and now lasts ARGV[2] ms again (the
  job also leaves `stalled`: it is alive); 0 when the lock is gone or another
  token holds it.

  Events: none.
]]

if redis.call("GET", KEYS[1]) ~= ARGV[1] then
  return 0
end
redis.call("PEXPIRE", KEYS[1], ARGV[2])
redis.call("SREM", KEYS[2], ARGV[3])
return 1
