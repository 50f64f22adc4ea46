-- Take up to `count` ids off the front of a state: a list's head or a sorted
-- set's lowest scores. Used by the bulk deletes that work in bounded batches.
local function take_batch(key, is_list, count)
  if count <= 0 then
    return {}
  end
  local ids
  if is_list then
    ids = redis.call("LRANGE", key, 0, count - 1)
    if #ids > 0 then
      redis.call("LTRIM", key, #ids, -1)
    end
  else
    ids = redis.call("ZRANGE", key, 0, count - 1)
    if #ids > 0 then
      redis.call("ZREMRANGEBYRANK", key, 0, #ids - 1)
    end
  end
  return ids
end
