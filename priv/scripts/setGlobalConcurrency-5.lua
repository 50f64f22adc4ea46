#!lua
--[[
  setGlobalConcurrency: set or clear the queue's global concurrency, the most
  jobs its workers (all of them together, ours and BullMQ's) run at once:
  meta field `concurrency`, as BullMQ 5.x's Queue.setGlobalConcurrency and
  removeGlobalConcurrency write it. Raising or clearing the limit wakes the
  blocked workers when jobs are ready, so they start at once instead of at
  their next poll.

  KEYS[1] meta
  KEYS[2] active
  KEYS[3] wait
  KEYS[4] prioritized
  KEYS[5] marker

  ARGV[1] the new limit: a whole number from 1 up, or "" to clear it

  Returns: the previous stored value ("" when there was none), as it was
  stored, whatever it was; an error naming the argument, nothing changed,
  when ARGV[1] is not a whole number of at least 1 (and not ""); refused
  with a WRONGTYPE error naming the key, nothing changed, when one of the
  KEYS has the wrong type.

  Memory: refused when Redis is over maxmemory (no allow-oom flag).

  Events: none (BullMQ emits none for it either).
]]
--- @include "readyTarget"
--- @include "keyCheck"

local refused = structure_refusal({
  KEYS[1], "hash", KEYS[2], "list", KEYS[3], "list", KEYS[4], "zset", KEYS[5], "zset",
})
if refused then
  return refused
end
local limit = ARGV[1]
if limit ~= "" and not string.match(limit, "^[1-9]%d?%d?%d?%d?%d?%d?%d?%d?$") then
  return redis.error_reply("ERR setGlobalConcurrency: the limit must be a whole number from 1 to 999999999, or empty to clear it")
end

local previous = redis.call("HGET", KEYS[1], "concurrency") or ""
if limit == "" then
  redis.call("HDEL", KEYS[1], "concurrency")
else
  redis.call("HSET", KEYS[1], "concurrency", limit)
end

local q = {meta = KEYS[1], active = KEYS[2], wait = KEYS[3], prioritized = KEYS[4], marker = KEYS[5]}
local _, may_take = ready_list(q)
if may_take and (redis.call("LLEN", q.wait) > 0 or redis.call("ZCARD", q.prioritized) > 0) then
  wake_workers(q.marker)
end
return previous
