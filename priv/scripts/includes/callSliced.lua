-- Run a variadic command (ZREM, LPUSH ...) on a whole array of values. Lua's
-- unpack runs out of stack after a few thousand values, so they go in slices;
-- the values keep their order.
local function call_sliced(command, key, values)
  for first = 1, #values, 5000 do
    redis.call(command, key, unpack(values, first, math.min(first + 4999, #values)))
  end
end
