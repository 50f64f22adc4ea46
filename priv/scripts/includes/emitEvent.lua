-- Lifecycle events go to one capped stream per queue. The cap lives in meta
-- (opts.maxLenEvents) so every writer trims the same way; ~ lets Redis trim
-- whole macro nodes, which keeps XADD O(1).
local function events_cap(meta_key)
  local cap = redis.call("HGET", meta_key, "opts.maxLenEvents")
  return tonumber(cap) or 10000
end

local function emit_event(events_key, cap, event, ...)
  return redis.call("XADD", events_key, "MAXLEN", "~", cap, "*", "event", event, ...)
end
