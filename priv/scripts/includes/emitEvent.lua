--- @include "numbers"

-- Lifecycle events go to one capped stream per queue. The cap lives in meta
-- (opts.maxLenEvents) so every writer trims the same way; ~ lets Redis trim
-- whole macro nodes, which keeps XADD O(1). A cap that is not a plain
-- non-negative integer would make XADD fail after the script's other writes,
-- so it counts as unset.
local DEFAULT_EVENTS_CAP = "10000"

-- The cap that meta's opts.maxLenEvents (`stored`, false when unset) sets.
local function cap_of(stored)
  if is_integer_text(stored) and string.sub(stored, 1, 1) ~= "-" then
    return stored
  end
  return DEFAULT_EVENTS_CAP
end

local function events_cap(meta_key)
  return cap_of(redis.call("HGET", meta_key, "opts.maxLenEvents"))
end

local function emit_event(events_key, cap, event, ...)
  return redis.call("XADD", events_key, "MAXLEN", "~", cap, "*", "event", event, ...)
end
