--- @include "emitEvent"

-- The common pick-up in straight-line Lua, shared by moveToActive and by
-- moveToFinished when it takes the next job: the queue neither paused nor
-- limited (global concurrency, rate limit), no delayed job due, and the
-- next job a sound one at the tail of wait or the head of prioritized, or
-- nothing ready at all. Anything else is the general path's to decide
-- (takeNextJob.lua), which the caller enters before its first write
-- whenever these functions answer false; the general path then reads again
-- what it needs.
--
-- Why a path of its own: Redis runs a script's Lua for every job, and what
-- costs there is what allocates (tables, strings, a reply's elements turned
-- into Lua and back) and what converts numbers to text, more than the
-- number of lines. So these steps make no tables besides the answer, pass
-- every number to Redis as the text it arrived as, and read the next job
-- with the HGETALL that is its answer anyway (docs/benchmarks.md, issue 24).
-- Every read is a pcall: a key of another type sends the call to the
-- general path, which refuses it naming the key.
--
-- Keys are derived from the queue's key prefix `base` ("<prefix>:<queue>:",
-- the names of queues/keys.py), so callers pass one key and few arguments:
-- each KEYS or ARGV element costs Redis about as much as a short command.

-- The events cap the queue's meta sets, or false when the queue is paused
-- or limited (global concurrency, or the queue's own rate limit) and the
-- general path must take the job. One HMGET, which proves meta a hash.
local function open_queue_cap(base)
  local meta = redis.pcall("HMGET", base .. "meta", "paused", "concurrency", "max",
    "opts.maxLenEvents")
  if meta.err or meta[1] or meta[2] or meta[3] then
    return false
  end
  return cap_of(meta[4])
end

-- Reads only, after the caller's own: the job to take next and what starting
-- it needs, or false for the general path. Answers the job's id (nil when
-- nothing is ready), its fields as HGETALL gave them, whether it comes from
-- wait (else prioritized), its `ats` one up as text, whether another job
-- stays ready behind it, and the next delayed job's due time (ms, 0: none).
-- `leaving` is the id the caller is finishing (never taken here: its hash
-- may be gone by the time the job would start).
local function ready_job(base, now_text, leaving)
  local first_delayed = redis.pcall("ZRANGE", base .. "delayed", "0", "0", "WITHSCORES")
  if first_delayed.err then
    return false
  end
  local due = 0
  local score = first_delayed[2]
  if score then
    score = tonumber(score)
    -- Due (promotion), or a score no writer of delayed jobs makes.
    if not score or score ~= score or score < (tonumber(now_text) + 1) * 4096
        or score == math.huge then
      return false
    end
    due = math.floor(score / 4096)
  end
  local tail = redis.pcall("LRANGE", base .. "wait", "-2", "-1")
  if tail.err then
    return false
  end
  local head = tail
  if #tail < 2 then
    head = redis.pcall("ZRANGE", base .. "prioritized", "0", "1")
    if head.err then
      return false
    end
  end
  local job_id = tail[#tail] or head[1]
  if not job_id then
    return nil, nil, false, nil, false, due
  end
  -- A legacy "0:" marker some old writers left in wait (string.byte first:
  -- it makes no string).
  if job_id == leaving or (string.byte(job_id) == 48 and string.sub(job_id, 1, 2) == "0:") then
    return false
  end
  local fields = redis.pcall("HGETALL", base .. job_id)
  if fields.err then
    return false
  end
  -- The checks jobRead.lua makes: a job has a name or a timestamp, the
  -- counters the start increments are integers; a deferred failure (defa)
  -- is carried out by the general path.
  local known, started = false, "1"
  for index = 1, #fields, 2 do
    local field = fields[index]
    if field == "name" or field == "timestamp" then
      known = true
    elseif field == "ats" or field == "atm" then
      local count = fields[index + 1]
      -- At most 15 digits: one more is exact in a Lua number.
      if #count > 15 or not (count == "0" or string.find(count, "^%-?[1-9]%d*$")) then
        return false
      end
      if field == "ats" then
        started = string.format("%d", tonumber(count) + 1)
      end
    elseif field == "defa" then
      return false
    end
  end
  if not known then
    return false
  end
  return job_id, fields, #tail > 0, started, #tail + (head == tail and 0 or #head) > 1, due
end

-- The writes that start a job ready_job chose, after the caller's own:
-- moved to active, locked (token "0": no lock), announced, stamped; the
-- answer moveToActive gives. `active_key` and `events` are the queue's keys
-- of those names (the caller has proven them), `lock_ms` the lock's
-- duration as integer text; `wake` leaves the wake-up marker for the other
-- workers (moveToActive's, when more jobs are ready and it is gone).
-- The fields read before are patched as HSET changes them: HGETALL again
-- would turn every field into Lua once more.
-- The move into active comes first and proves active: Redis checks both
-- lists' types before RPOPLPUSH pops, and LPUSH changes nothing when it
-- fails, so an `active` of another type answers false with nothing
-- written, and moveToActive's general path refuses the call naming it (no
-- probe of active needed; a finish has proven it by its LREM already).
local function start_ready_job(base, active_key, events, job_id, fields, from_wait, started,
    wake, token, lock_ms, worker_name, now_text, cap)
  local job_key = base .. job_id
  local moved
  if from_wait then
    moved = redis.pcall("RPOPLPUSH", base .. "wait", active_key)
  else
    moved = redis.pcall("LPUSH", active_key, job_id)
  end
  if type(moved) == "table" then
    return false
  end
  if not from_wait then
    redis.call("ZREM", base .. "prioritized", job_id)
  end
  if token ~= "0" then
    redis.call("SET", job_key .. ":lock", token, "PX", lock_ms)
  end
  emit_event(events, cap, "active", "jobId", job_id, "prev", "waiting")
  local named = worker_name ~= ""
  if named then
    redis.call("HSET", job_key, "processedOn", now_text, "pb", worker_name, "ats", started)
  else
    redis.call("HSET", job_key, "processedOn", now_text, "ats", started)
  end
  if wake then
    redis.call("ZADD", base .. "marker", "0", "0")
  end
  local at_processed, at_by, at_started
  for index = 1, #fields, 2 do
    local field = fields[index]
    if field == "processedOn" then
      at_processed = index + 1
    elseif field == "pb" then
      at_by = index + 1
    elseif field == "ats" then
      at_started = index + 1
    end
  end
  local size = #fields
  if at_processed then
    fields[at_processed] = now_text
  else
    fields[size + 1], fields[size + 2], size = "processedOn", now_text, size + 2
  end
  if named then
    if at_by then
      fields[at_by] = worker_name
    else
      fields[size + 1], fields[size + 2], size = "pb", worker_name, size + 2
    end
  end
  if at_started then
    fields[at_started] = started
  else
    fields[size + 1], fields[size + 2] = "ats", started
  end
  return {fields, job_id, 0, 0}
end
