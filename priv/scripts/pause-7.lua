#!lua
--[[
  pause: pause or resume a queue, 5.x layout. Pausing moves the ready jobs
  from wait to paused, sets meta.paused and deletes the marker so blocked
  workers stop being woken; resuming moves them back and re-arms the marker
  for ready and delayed jobs. Calling it for the state the queue is already
  in changes nothing.

  KEYS[1] wait
  KEYS[2] paused
  KEYS[3] meta
  KEYS[4] prioritized
  KEYS[5] delayed
  KEYS[6] marker
  KEYS[7] events

  ARGV[1] "pause" or "resume"

  Returns: 1 the queue changed state, 0 it already was in the asked state;
  refused with a WRONGTYPE error naming the key, nothing changed, when one of
  the KEYS has the wrong type.

  Memory: refused when Redis is over maxmemory (no allow-oom flag).

  Events: paused or resumed (no fields).
]]
--- @include "emitEvent"
--- @include "wakeWorkers"
--- @include "keyCheck"

local refused = structure_refusal({
  KEYS[1], "list", KEYS[2], "list", KEYS[3], "hash", KEYS[4], "zset",
  KEYS[5], "zset", KEYS[6], "zset", KEYS[7], "stream",
})
if refused then
  return refused
end
local pausing = ARGV[1] == "pause"
local is_paused = redis.call("HEXISTS", KEYS[3], "paused") == 1
if pausing == is_paused then
  return 0
end

local from, to = KEYS[1], KEYS[2]
if not pausing then
  from, to = KEYS[2], KEYS[1]
end
if redis.call("EXISTS", to) == 0 then
  if redis.call("EXISTS", from) == 1 then
    redis.call("RENAME", from, to)
  end
else
  -- Another writer left jobs in the target list (6.x keeps them in wait while
  -- paused): RENAME would drop them, so append one by one; the ones already
  -- in the target run first.
  while redis.call("RPOPLPUSH", from, to) do
  end
end

if pausing then
  redis.call("HSET", KEYS[3], "paused", 1)
  redis.call("DEL", KEYS[6])
else
  redis.call("HDEL", KEYS[3], "paused")
  if redis.call("LLEN", KEYS[1]) > 0 or redis.call("ZCARD", KEYS[4]) > 0 then
    wake_workers(KEYS[6])
  end
  arm_delayed_marker(KEYS[6], KEYS[5])
end
emit_event(KEYS[7], events_cap(KEYS[3]), pausing and "paused" or "resumed")
return 1
