--- @include "keyCheck"

-- The dashboard's error groups index (docs/protocol.md, "The dashboard's
-- error groups index"), shared by its three scripts. Every script of the
-- index takes the same KEYS, in this order, from KEYS[first]:
--   state (hash: gen, built, watermark, cursor, total), counts (hash: group
--   -> jobs), samples (hash: group -> sample JSON, opaque here), first and
--   last (hashes: group -> finishedOn ms), jobs (hash: job id -> group)
-- and each group's jobs are a zset (score = finishedOn) named the group base
-- (ARGV) followed by the group key.

local function index_keys(first)
  return {state = KEYS[first], counts = KEYS[first + 1], samples = KEYS[first + 2],
    first = KEYS[first + 3], last = KEYS[first + 4], jobs = KEYS[first + 5]}
end

local function index_structure(index, expected)
  for _, name in ipairs({"state", "counts", "samples", "first", "last", "jobs"}) do
    expect(expected, index[name], "hash")
  end
  return expected
end

-- Adds a group's zset (once; nothing for a nil group) to a
-- structure_refusal list: a group key of the wrong type would make ZADD /
-- ZREM fail after earlier writes.
local function expect_group(expected, seen, group_base, group)
  if group and not seen[group] then
    seen[group] = true
    expect(expected, group_base .. group, "zset")
  end
end

local function expect_groups(expected, seen, group_base, groups)
  for _, group in ipairs(groups) do
    expect_group(expected, seen, group_base, group)
  end
end

-- A refusal of a count that HINCRBY cannot increment (a hand edit, another
-- writer): the index is broken, and the dashboard rebuilds it on this
-- WRONGTYPE naming the hash (queues/read/error_groups.py).
local function not_a_count(key, what)
  return redis.error_reply("WRONGTYPE key " .. key .. " holds a hash whose " .. what
    .. " is not an integer, expected a hash; nothing was changed")
end

-- The whole check before the first write: the index's keys, the groups'
-- zsets, then the generation and the total (every script of the index that
-- writes may HINCRBY it). Answers the reply to return at once, or nil.
local function index_refusal(index, expected, generation)
  local refused = structure_refusal(expected)
  if refused then
    return refused
  end
  local state = redis.call("HMGET", index.state, "gen", "total")
  if (state[1] or "0") ~= generation then
    -- A caller that read the index before a reset (a newer generation) must
    -- not write what it read into the new one: it would count jobs twice.
    return "stale"
  end
  if state[2] and not is_integer_text(state[2]) then
    return not_a_count(index.state, "total")
  end
  return nil
end

-- The counts of the groups in `seen` (group -> true, as expect_group fills
-- it), which a script of the index will HINCRBY. A count that is not an
-- integer would fail its HINCRBY after the script's earlier writes, and Lua
-- does not roll back: so they are read and checked before the first write
-- (the total is, in index_refusal). Answers the groups' counts as numbers
-- (group -> count; nil where a group has none), or nil and the refusal to
-- return.
local function index_counts(index, seen)
  local groups = {}
  for group in pairs(seen) do
    groups[#groups + 1] = group
  end
  local count_of = {}
  -- unpack runs out of stack past a few thousand values: a slice at a time.
  for from = 1, #groups, 1000 do
    local last = math.min(from + 999, #groups)
    local counts = redis.call("HMGET", index.counts, unpack(groups, from, last))
    for offset = 0, last - from do
      local group, count = groups[from + offset], counts[offset + 1]
      if count then
        if not is_integer_text(count) then
          return nil, not_a_count(index.counts, "count of " .. group)
        end
        count_of[group] = tonumber(count)
      end
    end
  end
  return count_of
end

-- Takes a job out of its group; a group left empty goes entirely (answers
-- true then). Its counts were checked first (index_counts).
local function unindex_job(index, group_base, group, job_id)
  redis.call("ZREM", group_base .. group, job_id)
  redis.call("HDEL", index.jobs, job_id)
  redis.call("HINCRBY", index.state, "total", -1)
  if redis.call("HINCRBY", index.counts, group, -1) <= 0 then
    redis.call("HDEL", index.counts, group)
    redis.call("HDEL", index.samples, group)
    redis.call("HDEL", index.first, group)
    redis.call("HDEL", index.last, group)
    redis.call("DEL", group_base .. group)
    return true
  end
  return false
end

-- Stream ids "ms-seq" compared as numbers (string order would put 9 after 10).
local function stream_id_after(a, b)
  local a_ms, a_seq = string.match(a, "^(%d+)-(%d+)$")
  local b_ms, b_seq = string.match(b or "", "^(%d+)-(%d+)$")
  if not a_ms then
    return false
  end
  if not b_ms then
    return true
  end
  if tonumber(a_ms) ~= tonumber(b_ms) then
    return tonumber(a_ms) > tonumber(b_ms)
  end
  return tonumber(a_seq) > tonumber(b_seq)
end

-- Moves the events cursor forward only: two dashboards catching up at once
-- may finish in either order.
local function advance_cursor(index, cursor)
  if cursor ~= "" and stream_id_after(cursor, redis.call("HGET", index.state, "cursor")) then
    redis.call("HSET", index.state, "cursor", cursor)
  end
end
