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
  the wrong type.

  Memory: refused when Redis is over maxmemory (no allow-oom flag).

  Events: none (the index is the dashboard's, not the queue's).
]]
--- @include "errorGroups"

local failed_key = KEYS[1]
local index = index_keys(2)
local group_base = ARGV[1]
local max_groups = tonumber(ARGV[3]) or 0
local OTHER = "other"

local expected = index_structure(index, {failed_key, "zset"})
local seen = {}
-- Each job's group before this call, read once for the checks and the
-- counting both: one HMGET per thousand jobs (unpack takes a few thousand
-- values at most), held_before[i] for the job at ARGV[i].
local held_before = {}
local PART = 1000
for from = 7, #ARGV, 4 * PART do
  local ids = {}
  for i = from, math.min(from + 4 * PART - 1, #ARGV), 4 do
    ids[#ids + 1] = ARGV[i]
  end
  local held = redis.call("HMGET", index.jobs, unpack(ids))
  for n = 1, #ids do
    local i = from + 4 * (n - 1)
    held_before[i] = held[n]
    expect_group(expected, seen, group_base, ARGV[i + 2])
    expect_group(expected, seen, group_base, OTHER)
    expect_group(expected, seen, group_base, held[n])
  end
end
local refused = index_refusal(index, expected, ARGV[2])
if refused then
  return refused
end

-- Per job: its checks; per group, once per call: the count, the group's
-- zset, first and last seen; one HSET for the jobs' groups (a call of 250
-- jobs of few kinds makes about two Redis calls per job, not five).
local added, skipped = 0, 0
local kept = redis.call("HLEN", index.counts) - redis.call("HEXISTS", index.counts, OTHER)
local target_of, seen_span = {}, {}
-- The group this call put a job in: a job given twice in one call finds
-- itself counted (its held_before is what it was before the call).
local written = {}
-- The writes of the jobs counted so far, not sent yet: per group its count,
-- the sample of its first job and its zset's score-member pairs; the jobs'
-- groups as field-value pairs. Sent before a job is taken out of its old
-- group (that may empty a group this call counts into) and at the end.
local pending, pending_jobs, pending_size = {}, {}, 0
local function write_pending()
  for target, batch in pairs(pending) do
    if redis.call("HINCRBY", index.counts, target, batch.count) == batch.count then
      redis.call("HSET", index.samples, target, batch.sample)
    end
    redis.call("ZADD", group_base .. target, unpack(batch.members))
  end
  if pending_size > 0 then
    redis.call("HSET", index.jobs, unpack(pending_jobs))
  end
  pending, pending_jobs, pending_size = {}, {}, 0
end
for i = 7, #ARGV, 4 do
  local job_id, finished, group = ARGV[i], tonumber(ARGV[i + 1]), ARGV[i + 2]
  local score = tonumber(redis.call("ZSCORE", failed_key, job_id))
  local old = written[job_id]
  local counted = old ~= nil -- counted by this call, at this same score
  if old == nil then
    old = held_before[i]
    counted = old and tonumber(redis.call("ZSCORE", group_base .. old, job_id)) == score
  end
  if score == nil or score ~= finished or counted then
    skipped = skipped + 1
  else
    if old then
      write_pending()
      if unindex_job(index, group_base, old, job_id) then
        target_of[old] = nil
        if old ~= OTHER then
          kept = kept - 1
        end
      end
    end
    -- Where this call counts the group's jobs. A group it has counted into
    -- cannot be emptied by a later unindex of the same call (its count holds
    -- those jobs), so the answer holds for the whole call.
    local target = target_of[group]
    if not target then
      target = group
      if redis.call("HEXISTS", index.counts, group) == 0 then
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
      -- The first job counted into a group that had none gives its sample.
      batch = {count = 0, sample = ARGV[i + 3], members = {}}
      pending[target] = batch
    end
    batch.count = batch.count + 1
    batch.members[#batch.members + 1] = finished
    batch.members[#batch.members + 1] = job_id
    pending_jobs[pending_size + 1] = job_id
    pending_jobs[pending_size + 2] = target
    pending_size = pending_size + 2
    written[job_id] = target
    local span = seen_span[target]
    if span then
      span[1], span[2] = math.min(span[1], finished), math.max(span[2], finished)
    else
      seen_span[target] = {finished, finished}
    end
    added = added + 1
    if pending_size >= 2000 then
      write_pending() -- unpack takes a few thousand values at most
    end
  end
end
write_pending()
for target, span in pairs(seen_span) do
  local first = tonumber(redis.call("HGET", index.first, target))
  if first == nil or span[1] < first then
    redis.call("HSET", index.first, target, string.format("%d", span[1]))
  end
  local last = tonumber(redis.call("HGET", index.last, target))
  if last == nil or span[2] > last then
    redis.call("HSET", index.last, target, string.format("%d", span[2]))
  end
end
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
