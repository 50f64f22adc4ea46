--- @include "lockStatus"
--- @include "finishSteps"
--- @include "finishMetrics"
--- @include "takeNextJob"

-- The general path of moveToFinished-1.lua, for every call its straight-line
-- path does not take (see that file): a flow parent or child, a
-- deduplication id, metrics, removal by age, no next job wanted, a queue
-- paused or limited, a due delayed job, a broken job, or a key of another
-- type, which is refused here. It reads everything again itself (the
-- straight-line path has written nothing when it hands over), and it is
-- included inside a function there, so only a call that takes it defines
-- its steps. Arguments as moveToFinished-1.lua's header gives them.
local function finish_in_general()
  local base, job_key = ARGV[1], KEYS[1]
  local queue = {
    wait = base .. "wait", active = base .. "active", prioritized = base .. "prioritized",
    events = base .. "events", limiter = base .. "limiter", delayed = base .. "delayed",
    paused = base .. "paused", meta = base .. "meta", pc = base .. "pc",
    marker = base .. "marker", base = base,
  }
  local job_id, now, now_text = ARGV[2], tonumber(ARGV[3]), ARGV[3]
  local target, value = ARGV[4], ARGV[5]
  local stalled_key, finished_key = base .. "stalled", base .. target
  local metrics_key = base .. "metrics:" .. target
  local fetch_next = ARGV[9] ~= "0"
  local opts = ARGV[11] ~= "" and cmsgpack.unpack(ARGV[11]) or {}
  opts.token, opts.lockDuration, opts.name, opts.attempts = ARGV[6], ARGV[9], ARGV[10], ARGV[8]
  local record_points = tonumber(opts.maxMetricsSize) or 0
  local keep_count = tonumber(ARGV[7]) or -1
  local keep_age = tonumber(opts.age)
  local keep_limit = tonumber(opts.limit) or 1000

  -- Reads first. Each answers a question the finish asks anyway and proves
  -- the type of the key it reads (wrongType.lua); a key written later that no
  -- read proves is probed. So every refusal comes before the first write.
  local problem, job = read_job(job_key, 2, 3, "name", "timestamp", "atm", "parentKey", "parent",
    "deid")
  if problem == "missing" then
    return -1
  elseif problem then
    return broken_reply(problem)
  end
  local children, failed_children = job_key .. ":dependencies", job_key .. ":unsuccessful"
  if target == "completed" and redis.call("EXISTS", children, failed_children) > 0 then
    -- pcall: a children key of another type is the job's breakage, not a crash.
    local pending = redis.pcall("SCARD", children)
    if type(pending) == "table" then
      return broken_reply("key:dependencies")
    end
    if pending > 0 then
      return -4
    end
    local failed_count = redis.pcall("ZCARD", failed_children)
    if type(failed_count) == "table" then
      return broken_reply("key:unsuccessful")
    end
    if failed_count > 0 then
      return -9
    end
  end
  local lock_refused = lock_status(job_key, opts.token)
  if lock_refused ~= 0 then
    return lock_refused
  end
  local stalled_mark, wrong_stalled = call_typed("set", stalled_key, "SISMEMBER", job_id)
  if wrong_stalled then
    return wrong_stalled
  end
  local has_parent = (job[4] and job[4] ~= "") or job[5]
  local pickup = nil
  if fetch_next then
    local wrong_pickup
    pickup, wrong_pickup = plan_pickup(queue, opts, now, 1, has_parent, job_id)
    if wrong_pickup then
      return wrong_pickup
    end
    queue.cap = pickup.cap
  else
    local stored, wrong_meta = call_typed("hash", queue.meta, "HGET", "opts.maxLenEvents")
    if wrong_meta then
      return wrong_meta
    end
    queue.cap = cap_of(stored)
  end
  -- The keys written below that no read above proves, each by a read of its
  -- type: the events the finish emits, the finished set when the job stays,
  -- metrics when recorded, and, when no job is taken, what the drained check
  -- reads (plan_pickup proves them otherwise).
  local _, wrong = call_typed("stream", queue.events, "XLEN")
  if not wrong and keep_count ~= 0 then
    _, wrong = call_typed("zset", finished_key, "ZCARD")
  end
  if not wrong and record_points > 0 then
    _, wrong = call_typed("hash", metrics_key, "HLEN")
    if not wrong then
      _, wrong = call_typed("list", metrics_key .. ":data", "LLEN")
    end
  end
  if not wrong and not fetch_next then
    _, wrong = call_typed("list", queue.wait, "LLEN")
    if not wrong then
      _, wrong = call_typed("zset", queue.prioritized, "ZCARD")
    end
  end
  if wrong then
    return wrong
  end

  -- The first write: a job that is not active (-3) leaves everything as it was.
  local removed, wrong_active = call_typed("list", queue.active, "LREM", "-1", job_id)
  if wrong_active then
    return wrong_active
  end
  if removed == 0 then
    return -3
  end
  -- The flow parent is read before the job's own writes, which may delete
  -- the job (its parentKey with it); the parent is told after them.
  local flows = has_parent and rare()
  local parent = flows and flows.parent_of(job_key)
  local attempts = settle_finished_job(job_key, stalled_key, stalled_mark, one_more(job[3]))
  if job[6] then
    rare().release_dedup_id(queue.base, job[6], job_id)
  end
  if parent then
    if target == "completed" then
      flows.child_completed(parent, job_key, value, now)
    else
      flows.child_failed(parent, job_key, value, now, opts)
    end
    if keep_count == 0 then
      flows.child_removed(parent, job_key, now)
    end
  end

  if keep_count ~= 0 then
    redis.call("ZADD", finished_key, now_text, job_id)
    -- Removes finished jobs (and all their keys) from the target set.
    local function remove_finished(ids)
      if #ids == 0 then
        return
      end
      for _, id in ipairs(ids) do
        remove_job_keys(queue.base .. id)
      end
      redis.call("ZREM", finished_key, unpack(ids))
    end
    if keep_age then
      -- Strictly older than `age` seconds; formatted by hand because Lua's
      -- number to string conversion would print large scores as 1.7e+12.
      local cutoff = string.format("(%d", math.floor(now - keep_age * 1000))
      remove_finished(redis.call("ZRANGEBYSCORE", finished_key, "-inf", cutoff,
        "LIMIT", 0, keep_limit))
    end
    if keep_count > 0 then
      -- Oldest first, bounded like the age rule so that lowering the count on
      -- a huge set cannot block Redis in one call.
      local excess = redis.call("ZCARD", finished_key) - keep_count
      if excess > 0 then
        remove_finished(redis.call("ZRANGE", finished_key, 0, math.min(excess, keep_limit) - 1))
      end
    end
  end
  announce_finish(queue.events, queue.cap, attempts)

  if record_points > 0 then
    record_metrics(metrics_key, record_points, now)
  end

  local reply = 0
  if fetch_next then
    reply = take_planned(queue, pickup, opts, now, now_text)
    if reply[2] ~= 0 then
      return reply
    end
  end
  if redis.call("LLEN", queue.wait) == 0 and redis.call("LLEN", queue.active) == 0
      and redis.call("ZCARD", queue.prioritized) == 0 then
    emit_event(queue.events, queue.cap, "drained")
  end
  return reply
end
