--- @include "callSliced"

-- Stand-in written over a list entry before one LREM sweeps them all; it has
-- the legacy marker form, which every reader already skips.
local BATCH_TOMBSTONE = "0:taken"

-- Take up to `count` ids off the front of a state (a list's head, a sorted
-- set's lowest scores) for the bulk deletes that work in bounded batches.
-- `keep(id)` passes over the ids that must stay: it answers a reason to
-- report (a job whose keys are broken), true to keep one silently (a job
-- scheduler's next run), or nil to take it. Kept ids stay where they are, so
-- a later call looks at them again. Reported ones are appended to `skipped`
-- as id, reason pairs. Every id is judged before the first write.
-- `prepare(chunk)`, when given, is called with each chunk of ids read before
-- they are judged (to ask other keys about a chunk at once).
local function take_batch(key, is_list, count, keep, skipped, prepare)
  local taken, positions = {}, {}
  if count <= 0 then
    return taken
  end
  local start, chunk_size, kept_any = 0, 1000, false
  while #taken < count do
    local chunk
    if is_list then
      chunk = redis.call("LRANGE", key, start, start + chunk_size - 1)
    else
      chunk = redis.call("ZRANGE", key, start, start + chunk_size - 1)
    end
    if prepare then
      prepare(chunk)
    end
    for offset, id in ipairs(chunk) do
      if #taken >= count then
        break
      end
      local verdict = keep(id)
      if verdict then
        kept_any = true
        if verdict ~= true then
          skipped[#skipped + 1] = id
          skipped[#skipped + 1] = verdict
        end
      else
        taken[#taken + 1] = id
        positions[#taken] = start + offset - 1
      end
    end
    if #chunk < chunk_size then
      break
    end
    start = start + chunk_size
  end
  if #taken == 0 then
    return taken
  end
  if not is_list then
    call_sliced("ZREM", key, taken)
  elseif not kept_any then
    -- Nothing kept: the taken ids are the head of the list.
    redis.call("LTRIM", key, #taken, -1)
  else
    for _, index in ipairs(positions) do
      redis.call("LSET", key, index, BATCH_TOMBSTONE)
    end
    redis.call("LREM", key, 0, BATCH_TOMBSTONE)
  end
  return taken
end
