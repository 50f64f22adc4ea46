-- Numbers read from Redis. Any writer may have left text where a number
-- belongs, and Lua's tonumber is no guard: it also accepts "inf", "nan",
-- " 12 " and "0x1f", and arithmetic on its nil (or on inf) fails or poisons
-- a score. Two predicates, one per use:

-- A number Lua arithmetic can use (priority, delay, timestamp, a score), or
-- nil when the text is not one or is not finite.
local function as_number(value)
  local number = tonumber(value)
  if number == nil or number ~= number or number == math.huge or number == -math.huge then
    return nil
  end
  return number
end

-- True when Redis itself can increment the text (HINCRBY, INCR): a plain
-- integer without sign tricks or leading zeros, and at most 18 digits so
-- that one more never overflows Redis's 64-bit counters.
local function is_integer_text(value)
  if type(value) ~= "string" then
    return false
  end
  local digits = string.match(value, "^%-?([1-9]%d*)$")
  return value == "0" or (digits ~= nil and #digits <= 18)
end
