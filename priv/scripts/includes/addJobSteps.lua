--- @include "emitEvent"
--- @include "readyTarget"
--- @include "delayedScore"
--- @include "keyCheck"

-- The steps of adding a job, shared by addJob (one job) and addJobs (many in
-- one call). Both take the same ten KEYS (see addJob-10.lua) and describe each
-- job with the same twelve arguments, in this order:
--   custom id ("" = counter), name, data JSON, opts JSON, timestamp (ms),
--   delay (ms, relative), priority (0 = none), lifo "1"/"0", deduplication id
--   ("" = none), deduplication ttl (ms), parent job key ("" = none), parent JSON.
local ADD_JOB_FIELDS = 12

-- What every add of one call shares. Nothing an add does changes meta or the
-- active list, so the events cap and where ready jobs go are read once per
-- call, not once per job.
local function add_context(keys, prefix)
  return {
    prefix = prefix,
    q = {wait = keys[1], paused = keys[2], meta = keys[3], prioritized = keys[6],
      pc = keys[7], active = keys[8], marker = keys[10]},
    id = keys[4], delayed = keys[5], events = keys[9],
    cap = events_cap(keys[3]),
    ready = nil, -- the list ready jobs go to, read at the first one
    wake = false, -- whether a ready job should wake the workers
    any_ready = false,
    any_delayed = false,
  }
end

-- Everything an add may write (the ten KEYS), checked before the call reads
-- or writes anything else.
local function add_refusal(keys)
  return structure_refusal({
    keys[1], "list", keys[2], "list", keys[3], "hash", keys[4], "counter",
    keys[5], "zset", keys[6], "zset", keys[7], "counter", keys[8], "list",
    keys[9], "stream", keys[10], "zset",
  })
end

-- A parent that can wait for a child: a hash whose dependencies key is a set
-- (or missing). Anything else is no parent job (-5), whatever is at its key.
local function parent_can_wait(parent_key)
  if key_type(parent_key) ~= "hash" then
    return false
  end
  local dependencies = key_type(parent_key .. ":dependencies")
  return dependencies == "none" or dependencies == "set"
end

-- Adds the job described by args[at] .. args[at + 11]. Returns its id, the
-- existing job's id (taken custom id, held deduplication id), or -5 when the
-- parent is gone (or is no job a child can wait for). Each job is checked
-- before its first write, so a refused job leaves nothing behind.
local function add_one_job(ctx, args, at)
  local custom_id = args[at]
  local name = args[at + 1]
  local delay = tonumber(args[at + 5]) or 0
  local priority = tonumber(args[at + 6]) or 0
  local dedup_id = args[at + 8]
  local parent_key = args[at + 10]

  if parent_key ~= "" and not parent_can_wait(parent_key) then
    return -5
  end

  -- The counter moves on every add so ids stay unique across writers that mix
  -- generated and custom ids (BullMQ does the same).
  local counter = redis.call("INCR", ctx.id)
  local job_id = custom_id ~= "" and custom_id or tostring(counter)
  local job_key = ctx.prefix .. job_id
  -- A generated id never names a key that exists: a counter behind its jobs
  -- (a restored backup, a hand DEL, another writer) would have the HSET below
  -- overwrite a job, and a key of another type would fail it. The counter
  -- steps past taken ids, one at a time for the first few (a counter a few
  -- jobs behind names the next free id), then in doubling strides, so one
  -- lost under a million jobs is past them in about thirty steps; it keeps
  -- the id given, repaired for the next add.
  local taken, stride = 0, 1
  while custom_id == "" and redis.call("EXISTS", job_key) == 1 do
    taken = taken + 1
    if taken > 8 and stride < 1073741824 then
      stride = stride * 2
    end
    job_id = tostring(redis.call("INCRBY", ctx.id, stride))
    job_key = ctx.prefix .. job_id
  end

  if custom_id ~= "" and redis.call("EXISTS", job_key) == 1 then
    -- The existing job is left exactly as it is.
    emit_event(ctx.events, ctx.cap, "duplicated", "jobId", job_id)
    return job_id
  end

  -- A deduplication key of another type (a writer's garbage) can name no
  -- job: the job is added without claiming it and the key is left alone.
  local dedup_key = ctx.prefix .. "de:" .. dedup_id
  local dedup_type = dedup_id ~= "" and key_type(dedup_key) or "none"
  if dedup_id ~= "" and (dedup_type == "none" or dedup_type == "string") then
    local ttl = tonumber(args[at + 9]) or 0
    local claimed
    if ttl > 0 then
      claimed = redis.call("SET", dedup_key, job_id, "PX", ttl, "NX")
    else
      claimed = redis.call("SET", dedup_key, job_id, "NX")
    end
    if not claimed then
      local kept = redis.call("GET", dedup_key)
      emit_event(ctx.events, ctx.cap, "deduplicated", "jobId", kept,
        "deduplicationId", dedup_id, "deduplicatedJobId", job_id)
      return kept
    end
  end

  local fields = {"name", name, "data", args[at + 2], "opts", args[at + 3],
    "timestamp", args[at + 4], "delay", delay, "priority", priority}
  if dedup_id ~= "" then
    fields[#fields + 1] = "deid"
    fields[#fields + 1] = dedup_id
  end
  if parent_key ~= "" then
    fields[#fields + 1] = "parentKey"
    fields[#fields + 1] = parent_key
    fields[#fields + 1] = "parent"
    fields[#fields + 1] = args[at + 11]
    -- The parent waits for this child until it finishes.
    redis.call("SADD", parent_key .. ":dependencies", job_key)
  end
  redis.call("HSET", job_key, unpack(fields))
  emit_event(ctx.events, ctx.cap, "added", "jobId", job_id, "name", name)

  if delay > 0 then
    local due = tonumber(args[at + 4]) + delay
    redis.call("ZADD", ctx.delayed, delayed_score(ctx.delayed, due), job_id)
    emit_event(ctx.events, ctx.cap, "delayed", "jobId", job_id, "delay", due)
    ctx.any_delayed = true
  else
    if ctx.ready == nil then
      ctx.ready, ctx.wake = ready_list(ctx.q)
    end
    if priority > 0 then
      redis.call("ZADD", ctx.q.prioritized, priority_score(priority, ctx.q.pc), job_id)
    else
      redis.call(args[at + 7] == "1" and "RPUSH" or "LPUSH", ctx.ready, job_id)
    end
    ctx.any_ready = true
    emit_event(ctx.events, ctx.cap, "waiting", "jobId", job_id)
  end
  return job_id
end

-- The marker, once per call: ZADD of the same member leaves the same final
-- state whether it runs after every add or once after the last.
local function finish_adds(ctx)
  if ctx.any_ready and ctx.wake then
    wake_workers(ctx.q.marker)
  end
  if ctx.any_delayed then
    arm_delayed_marker(ctx.q.marker, ctx.delayed)
  end
end
