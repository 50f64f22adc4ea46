-- Runtimes send extra fields (stacktrace, data updates ...) as one msgpack
-- array {name, value, name, value, ...}; an empty or absent argument sets nothing.
local function set_packed_fields(job_key, packed)
  if not packed or #packed == 0 then
    return
  end
  local flat = cmsgpack.unpack(packed)
  if type(flat) == "table" and #flat >= 2 and #flat % 2 == 0 then
    redis.call("HSET", job_key, unpack(flat))
  end
end
