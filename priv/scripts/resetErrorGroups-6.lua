#!lua flags=allow-oom
--[[
  resetErrorGroups: empty the dashboard's error groups index (before a
  rebuild, or when one of its keys is broken) and start a new generation, so
  that a dashboard still writing what it read before the reset is refused.

  KEYS[1] index state (hash)
  KEYS[2] index counts (hash: group -> jobs)
  KEYS[3] index samples (hash)
  KEYS[4] index first seen (hash)
  KEYS[5] index last seen (hash)
  KEYS[6] index jobs (hash)

  ARGV[1] group base (see addToErrorGroups): every group's zset is deleted
  ARGV[2] the version of the folding rules the new generation is built with
          (queues/read/error_folding.py RULES_VERSION): kept in the state
          as "rules", so that a dashboard with other rules counts it again
  ARGV[3] "1" when the index is reset to be counted again by newer rules
          (kept in the state as "regroup" until it is built: the page says
          "Regrouping"), else ""

  Returns: the new generation (an integer). Keys of any type are deleted,
  so a broken index is repaired by this script.

  Memory: runs when Redis is over maxmemory (allow-oom): it only frees.

  Events: none.
]]

local generation = tonumber((redis.pcall("HGET", KEYS[1], "gen"))) or 0
local groups = redis.pcall("HKEYS", KEYS[2])
if type(groups) == "table" and not groups["err"] then
  for _, group in ipairs(groups) do
    redis.call("DEL", ARGV[1] .. group)
  end
end
redis.call("DEL", ARGV[1] .. "other")
redis.call("DEL", KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5], KEYS[6])
generation = math.floor(generation) + 1
redis.call("HSET", KEYS[1], "gen", generation, "rules", ARGV[2])
if ARGV[3] == "1" then
  redis.call("HSET", KEYS[1], "regroup", "1")
end
return generation
