-- ZREM a whole array of members. Lua's unpack runs out of stack after a few
-- thousand values, so the members go in slices.
local function zrem_many(key, members)
  for first = 1, #members, 5000 do
    redis.call("ZREM", key, unpack(members, first, math.min(first + 4999, #members)))
  end
end
