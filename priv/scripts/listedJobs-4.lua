#!lua flags=no-writes
--[[
  listedJobs: the ids of a sorted-set state that a list state (wait, paused,
  active) holds too. A bulk action on a sorted-set state (retry-all,
  promote-all, clean) asks this before its first batch and has its batches
  leave those jobs where they are, reported: requeued, such a job would be in
  wait twice and run twice; cleaned, its hash would be deleted under the
  list's copy. A batch cannot afford the search itself: LPOS walks the list
  for each id, and a batch's own pushes make wait longer for the next one.
  Here each list is walked once per action, a bounded stretch per call.

  KEYS[1] the bulk action's source (zset): failed, completed, delayed or prioritized
  KEYS[2] wait
  KEYS[3] paused
  KEYS[4] active

  ARGV[1] the list to start in: 1 wait, 2 paused, 3 active
  ARGV[2] the index in that list to start at (0 up)
  ARGV[3] how many list entries this call may look at (1 up)

  Returns: {list, index, found}: where the next call starts (list 0 when
  every list has been looked at), and the entries looked at that KEYS[1]
  holds, as a flat list id, list name ("wait", "paused" or "active"), ...
  An entry may be looked at twice when producers push meanwhile (the caller
  keeps the first). When KEYS[1] is empty no list is looked at; a list key of
  another type holds no job and is passed over (the action that writes to it
  refuses it itself; a clean never touches it). Refused with a WRONGTYPE
  error naming the key when KEYS[1] is no sorted set.

  Memory: read-only (no-writes), so it runs when Redis is over maxmemory.

  Events: none.
]]
--- @include "keyCheck"

local refused = structure_refusal({KEYS[1], "zset"})
if refused then
  return refused
end
if redis.call("ZCARD", KEYS[1]) == 0 then
  return {0, 0, {}}
end

local NAMES = {"wait", "paused", "active"}
local list, index, budget = tonumber(ARGV[1]), tonumber(ARGV[2]), tonumber(ARGV[3])
local found = {}
while list <= 3 and budget > 0 do
  local entries = redis.pcall("LRANGE", KEYS[1 + list], index, index + budget - 1)
  if entries["err"] then
    entries = {}
  end
  -- ZMSCORE in slices: Lua's unpack runs out of stack after a few thousand.
  for first = 1, #entries, 1000 do
    local last = math.min(first + 999, #entries)
    local scores = redis.call("ZMSCORE", KEYS[1], unpack(entries, first, last))
    for offset, score in ipairs(scores) do
      if score then
        found[#found + 1] = entries[first + offset - 1]
        found[#found + 1] = NAMES[list]
      end
    end
  end
  budget = budget - #entries
  if budget > 0 then
    list, index = list + 1, 0
  else
    index = index + #entries
  end
end
if list > 3 then
  list = 0
end
return {list, index, found}
