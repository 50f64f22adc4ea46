--- @include "numbers"

-- Lifecycle events go to one capped stream per queue. The cap lives in meta
-- (opts.maxLenEvents) so every writer trims the same way; ~ lets Redis trim
-- whole macro nodes, which keeps XADD O(1). A cap that is not a plain
-- non-negative integer would make XADD fail after the script's other writes,
-- so it counts as unset.
local DEFAULT_EVENTS_CAP = 10000

local function events_cap(meta_key)
  local cap = redis.call("HGET", meta_key, "opts.maxLenEvents")
  if is_integer_text(cap) and string.sub(cap, 1, 1) ~= "-" then
    return cap
  end
  return DEFAULT_EVENTS_CAP
end

local function emit_event(events_key, cap, event, ...)
  return redis.call("XADD", events_key, "MAXLEN", "~", cap, "*", "event", event, ...)
end
