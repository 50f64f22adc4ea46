--- @include "numbers"
--- @include "wrongType"

-- One O(1) read per type that fails on a key of any other type (and reads
-- a missing key as empty): twice as cheap as TYPE, which answers a table.
local PROBE = {list = "LLEN", zset = "ZCARD", hash = "HLEN", set = "SCARD", stream = "XLEN",
  string = "STRLEN", counter = "GET"}

-- Whole-queue structures. `expected` is a flat array key, type, key, type
-- ..., type being one of Redis's (list, zset, hash, set, stream, string) or
-- "counter" (a string INCR can count on). A missing key is fine: the first
-- write creates it. Answers the error reply to return, or nil. A structure
-- of the wrong type cannot be worked around (a `failed` that is a string
-- holds no failed jobs), so the whole call is refused, naming the key.
local function structure_refusal(expected)
  for index = 1, #expected, 2 do
    local key, want = expected[index], expected[index + 1]
    local probed, refusal = call_typed(want, key, PROBE[want])
    if refusal then
      return refusal
    elseif want == "counter" and probed and not is_integer_text(probed) then
      return wrong_type_reply(key, "string that is not an integer", want)
    end
  end
  return nil
end

-- Adds a key and the type it must have to a structure_refusal list.
local function expect(expected, key, want)
  expected[#expected + 1] = key
  expected[#expected + 1] = want
end
