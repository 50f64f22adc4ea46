--- @include "readyTarget"
--- @include "emitEvent"
--- @include "delayedScore"
--- @include "numbers"

-- What telling a parent writes, with the type each key must have. TYPE goes
-- through pcall: on a cluster a parent outside the child's slot cannot even
-- be looked at, and counts as unsound like any other.
local function parent_keys_sound(parent)
  local base, key = parent.base, parent.key
  local expected = {
    key, "hash", key .. ":dependencies", "set", key .. ":processed", "hash",
    key .. ":failed", "hash", key .. ":unsuccessful", "zset",
    base .. "waiting-children", "zset", base .. "failed", "zset",
    base .. "events", "stream", base .. "meta", "hash", base .. "delayed", "zset",
    base .. "marker", "zset", base .. "wait", "list", base .. "paused", "list",
    base .. "active", "list", base .. "prioritized", "zset", base .. "pc", "string",
  }
  for index = 1, #expected, 2 do
    local reply = redis.pcall("TYPE", expected[index])
    if type(reply) ~= "table" or (reply["ok"] ~= "none" and reply["ok"] ~= expected[index + 1]) then
      return false
    end
  end
  return true
end

-- A parent whose keys a child's finish or removal could not write (wrong
-- types, a priority or delay that is not a number, a priority counter that
-- is not an integer) is left alone, as if the child had none: the child's
-- own move must not fail halfway because of another job's garbage.
local function parent_is_sound(parent)
  if not parent_keys_sound(parent) then
    return false
  end
  local attrs = redis.call("HMGET", parent.key, "priority", "delay")
  if (attrs[1] and not as_number(attrs[1])) or (attrs[2] and not as_number(attrs[2])) then
    return false
  end
  local counter = redis.call("GET", parent.base .. "pc")
  return not counter or is_integer_text(counter)
end

-- A child finishing tells its parent (flows). The parent is named by the
-- child's `parentKey` field ("<prefix>:<queue>:<id>", possibly another queue
-- of the same prefix) or by the `queueKey` + `id` of its `parent` JSON, which
-- also carries the failure policy flags (fpof / cpof / idof / rdof).
local function parent_of(job_key)
  local fields = redis.call("HMGET", job_key, "parentKey", "parent")
  local info = {}
  if fields[2] then
    local ok, decoded = pcall(cjson.decode, fields[2])
    if ok and type(decoded) == "table" then
      info = decoded
    end
  end
  local key = fields[1]
  local named_id = type(info.id) == "string" or type(info.id) == "number"
  if (not key or key == "") and type(info.queueKey) == "string" and named_id then
    key = info.queueKey .. ":" .. info.id
  end
  if not key or key == "" then
    return nil
  end
  -- Job ids contain no ':', so the id is what follows the last one.
  local id = string.match(key, "([^:]+)$")
  if not id then
    return nil
  end
  local parent = {key = key, id = id, base = string.sub(key, 1, #key - #id), info = info}
  if not parent_is_sound(parent) then
    return nil
  end
  return parent
end

-- The parent leaves waiting-children for the queue it would have entered at
-- add time: delayed when it has a delay, else ready (pushed to run next).
local function release_parent(parent, now)
  if redis.call("EXISTS", parent.key) == 0 then
    return
  end
  local base = parent.base
  if redis.call("ZREM", base .. "waiting-children", parent.id) == 0 then
    return
  end
  local events_key, meta_key = base .. "events", base .. "meta"
  local cap = events_cap(meta_key)
  local attrs = redis.call("HMGET", parent.key, "priority", "delay")
  local delay = tonumber(attrs[2]) or 0
  if delay > 0 then
    local delayed_key = base .. "delayed"
    redis.call("ZADD", delayed_key, delayed_score(delayed_key, now + delay), parent.id)
    emit_event(events_key, cap, "delayed", "jobId", parent.id, "delay", now + delay)
    arm_delayed_marker(base .. "marker", delayed_key)
    return
  end
  local q = {
    meta = meta_key, active = base .. "active", wait = base .. "wait", paused = base .. "paused",
    prioritized = base .. "prioritized", pc = base .. "pc", marker = base .. "marker",
  }
  push_ready(q, parent.id, tonumber(attrs[1]) or 0, true)
  emit_event(events_key, cap, "waiting", "jobId", parent.id, "prev", "waiting-children")
end

-- Takes the child out of the parent's pending set; true when it was there.
local function drop_dependency(parent, child_key)
  return redis.call("SREM", parent.key .. ":dependencies", child_key) == 1
end

-- `release` (release_parent unless given) when no child is pending any more.
local function release_parent_if_done(parent, now, release)
  if redis.call("SCARD", parent.key .. ":dependencies") == 0 then
    (release or release_parent)(parent, now)
  end
end

local function child_completed(parent, child_key, returnvalue, now)
  if drop_dependency(parent, child_key) then
    redis.call("HSET", parent.key .. ":processed", child_key, returnvalue)
    release_parent_if_done(parent, now)
  end
end

-- Without a policy the failed child stays pending and the parent waits (the
-- BullMQ default). fpof fails the parent at its next pick-up; cpof lets it run
-- now; idof and rdof count the child as done (idof also records the failure).
local function child_failed(parent, child_key, reason, now, flags)
  local info = parent.info
  if flags.fpof or info.fpof then
    if drop_dependency(parent, child_key) then
      redis.call("ZADD", parent.key .. ":unsuccessful", now, child_key)
      if redis.call("EXISTS", parent.key) == 1
          and not redis.call("ZSCORE", parent.base .. "failed", parent.id) then
        redis.call("HSET", parent.key, "defa", "child " .. child_key .. " failed")
        release_parent(parent, now)
      end
    end
  elseif flags.cpof or info.cpof then
    if drop_dependency(parent, child_key) then
      redis.call("HSET", parent.key .. ":failed", child_key, reason)
      release_parent(parent, now)
    end
  elseif flags.idof or info.idof or flags.rdof or info.rdof then
    if drop_dependency(parent, child_key) then
      if flags.idof or info.idof then
        redis.call("HSET", parent.key .. ":failed", child_key, reason)
      end
      release_parent_if_done(parent, now)
    end
  end
end

-- A child deleted (on finishing, or by an operator) can no longer be waited
-- for. `release` frees the parent when this was its last pending child:
-- release_parent unless the caller does something else with it (a drain).
local function child_removed(parent, child_key, now, release)
  if drop_dependency(parent, child_key) then
    release_parent_if_done(parent, now, release)
  end
end
