#!lua
--[[
  addToErrorGroups: count failed jobs into the dashboard's error groups
  index, each only while it is still failed with the finishedOn it was read
  with, and only once (a job already counted at that finishedOn is left as
  it is): two dashboards adding the same jobs count each one once.

  KEYS[1] failed (zset, score = finishedOn)
  KEYS[2] index state (hash)
  KEYS[3] index counts (hash: group -> jobs)
  KEYS[4] index samples (hash: group -> sample JSON)
  KEYS[5] index first seen (hash: group -> ms)
  KEYS[6] index last seen (hash: group -> ms)
  KEYS[7] index jobs (hash: job id -> group)

  ARGV[1] group base: a group's zset is this followed by its group key
          ("<prefix>:<queue>:dashboard-error-groups:group:"), so it shares
          the queue's hash tag
  ARGV[2] generation read from the index state ("0" when none): a reset
          since then makes the call stale
  ARGV[3] most groups kept ("other" aside): a job of a new group beyond
          them counts in the group "other"
  ARGV[4] watermark (ms, "" for none): the state's watermark becomes at
          least this
  ARGV[5] "1" to mark the index built (its first scan is complete), else ""
  ARGV[6] events cursor (stream id, "" for none): the state's cursor moves
          forward to it
  ARGV[7..] per job four values: job id, finishedOn (the score read), group
          key, sample JSON (kept when the job starts its group)

  Returns: {added, skipped}: skipped jobs are no longer failed, failed again
  since (another call adds them with their new finishedOn) or counted
  already; or "stale" and nothing changed. Refused with a WRONGTYPE error
  naming the key, nothing changed, when a key (a group's zset included) has
  the wrong type, a group's count in KEYS[3] or the total in KEYS[2] is not
  an integer.

  Memory: refused when Redis is over maxmemory (no allow-oom flag).

  Events: none (the index is the dashboard's, not the queue's).
]]
--- @include "errorGroups"

local failed_key = KEYS[1]
local index = index_keys(2)
local group_base = ARGV[1]
local max_groups = tonumber(ARGV[3]) or 0
local OTHER = "other"
local FIRST_JOB = 7
-- unpack takes a few thousand values at most: variadic commands are sent
-- this many values at a time.
local PART = 1000

-- `command` on `key` with `values`, PART at a time; the replies joined.
local function call_in_parts(command, key, values)
  local joined = {}
  for from = 1, #values, PART do
    local reply = redis.call(command, key, unpack(values, from, math.min(from + PART - 1, #values)))
    if type(reply) == "table" then
      for n = 1, #reply do
        joined[#joined + 1] = reply[n]
      end
    end
  end
  return joined
end

local ids = {}
for i = FIRST_JOB, #ARGV, 4 do
  ids[#ids + 1] = ARGV[i]
end
local expected = index_structure(index, {failed_key, "zset"})
local seen = {}
-- Each job's group before this call, read once for the checks and the
-- counting both (held_before[n] for the n-th job).
local held_before = call_in_parts("HMGET", index.jobs, ids)
expect_group(expected, seen, group_base, OTHER)
for n = 1, #ids do
  expect_group(expected, seen, group_base, ARGV[FIRST_JOB + 4 * (n - 1) + 2])
  expect_group(expected, seen, group_base, held_before[n])
end
local refused = index_refusal(index, expected, ARGV[2])
if refused then
  return refused
end

-- Read once per call, variadic, what used to be a command per job (each
-- job's score in failed) and per group (whether it exists, its count): a
-- command from Lua costs Redis more than the work it does, and these were
-- most of the first grouping's Redis CPU (bench/grouping.py).
local score_now = call_in_parts("ZMSCORE", failed_key, ids)
-- count_of[group]: the group's count as it stands in Redis (nil: no such
-- field), kept in step with every write below. A count no one can add to
-- breaks the index, and the caller rebuilds it: refused, still before the
-- first write.
local count_of, not_counts = index_counts(index, seen)
if not_counts then
  return not_counts
end

-- Per job: its checks; per group, once per call: the zset's ZADD; once per
-- call: the counts, samples, the jobs' groups, first and last seen (a call
-- of 250 jobs of 40 kinds makes about 140 Redis calls, not 600).
local added, skipped = 0, 0
local kept = redis.call("HLEN", index.counts) - (count_of[OTHER] and 1 or 0)
local target_of, seen_span = {}, {}
-- The group this call put a job in: a job given twice in one call finds
-- itself counted (its held_before is what it was before the call).
local written = {}
-- The writes of the jobs counted so far, not sent yet: per group its count,
-- the sample of its first job and its zset's score-member pairs; the jobs'
-- groups as field-value pairs. Sent before a job is taken out of its old
-- group (that may empty a group this call counts into) and at the end.
local pending, pending_jobs = {}, {}
local function write_pending()
  local counts, samples = {}, {}
  for target, batch in pairs(pending) do
    local before = count_of[target] or 0
    count_of[target] = before + batch.count
    counts[#counts + 1] = target
    counts[#counts + 1] = string.format("%d", count_of[target])
    if before == 0 then
      -- The first job counted into a group that had none gives its sample.
      samples[#samples + 1] = target
      samples[#samples + 1] = batch.sample
    end
    call_in_parts("ZADD", group_base .. target, batch.members)
  end
  call_in_parts("HSET", index.counts, counts)
  call_in_parts("HSET", index.samples, samples)
  call_in_parts("HSET", index.jobs, pending_jobs)
  pending, pending_jobs = {}, {}
end
for n = 1, #ids do
  local i = FIRST_JOB + 4 * (n - 1)
  local job_id, finished, group = ids[n], tonumber(ARGV[i + 1]), ARGV[i + 2]
  local score = tonumber(score_now[n])
  local old = written[job_id]
  local counted = old ~= nil -- counted by this call, at this same score
  if old == nil then
    old = held_before[n]
    counted = old and tonumber(redis.call("ZSCORE", group_base .. old, job_id)) == score
  end
  if score == nil or score ~= finished or counted then
    skipped = skipped + 1
  else
    if old then
      write_pending()
      if unindex_job(index, group_base, old, job_id) then
        count_of[old] = nil
        target_of[old] = nil
        if old ~= OTHER then
          kept = kept - 1
        end
      else
        count_of[old] = (count_of[old] or 0) - 1
      end
    end
    -- Where this call counts the group's jobs. A group it has counted into
    -- cannot be emptied by a later unindex of the same call (its count holds
    -- those jobs), so the answer holds for the whole call.
    local target = target_of[group]
    if not target then
      target = group
      if count_of[group] == nil then
        if kept >= max_groups then
          target = OTHER
        else
          kept = kept + 1
        end
      end
      target_of[group] = target
    end
    local batch = pending[target]
    if not batch then
      batch = {count = 0, sample = ARGV[i + 3], members = {}}
      pending[target] = batch
    end
    batch.count = batch.count + 1
    -- The score as the caller sent it: a Lua number would be formatted again.
    batch.members[#batch.members + 1] = ARGV[i + 1]
    batch.members[#batch.members + 1] = job_id
    pending_jobs[#pending_jobs + 1] = job_id
    pending_jobs[#pending_jobs + 1] = target
    written[job_id] = target
    local span = seen_span[target]
    if span then
      span[1], span[2] = math.min(span[1], finished), math.max(span[2], finished)
    else
      seen_span[target] = {finished, finished}
    end
    added = added + 1
  end
end
write_pending()

-- First and last seen of the groups counted into: one read and one write
-- each for all of them.
local targets = {}
for target in pairs(seen_span) do
  targets[#targets + 1] = target
end
local firsts = call_in_parts("HMGET", index.first, targets)
local lasts = call_in_parts("HMGET", index.last, targets)
local new_firsts, new_lasts = {}, {}
for n, target in ipairs(targets) do
  local span, first, last = seen_span[target], tonumber(firsts[n]), tonumber(lasts[n])
  if first == nil or span[1] < first then
    new_firsts[#new_firsts + 1] = target
    new_firsts[#new_firsts + 1] = string.format("%d", span[1])
  end
  if last == nil or span[2] > last then
    new_lasts[#new_lasts + 1] = target
    new_lasts[#new_lasts + 1] = string.format("%d", span[2])
  end
end
call_in_parts("HSET", index.first, new_firsts)
call_in_parts("HSET", index.last, new_lasts)
if added > 0 then
  redis.call("HINCRBY", index.state, "total", added)
end

local watermark = tonumber(ARGV[4])
if watermark and watermark > (tonumber(redis.call("HGET", index.state, "watermark")) or 0) then
  redis.call("HSET", index.state, "watermark", ARGV[4])
end
if ARGV[5] == "1" then
  redis.call("HSET", index.state, "built", "1")
end
advance_cursor(index, ARGV[6])
return {added, skipped}
