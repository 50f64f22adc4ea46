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
for i = 7, #ARGV, 4 do
  expect_groups(expected, seen, group_base,
    {ARGV[i + 2], OTHER, redis.call("HGET", index.jobs, ARGV[i])})
end
local refused = index_refusal(index, expected, ARGV[2])
if refused then
  return refused
end

local added, skipped = 0, 0
for i = 7, #ARGV, 4 do
  local job_id, finished, group, sample = ARGV[i], tonumber(ARGV[i + 1]), ARGV[i + 2], ARGV[i + 3]
  local score = tonumber(redis.call("ZSCORE", failed_key, job_id))
  local old = redis.call("HGET", index.jobs, job_id)
  local counted = old and tonumber(redis.call("ZSCORE", group_base .. old, job_id)) == score
  if score == nil or score ~= finished or counted then
    skipped = skipped + 1
  else
    if old then
      unindex_job(index, group_base, old, job_id)
    end
    if redis.call("HEXISTS", index.counts, group) == 0 then
      local kept = redis.call("HLEN", index.counts) - redis.call("HEXISTS", index.counts, OTHER)
      if kept >= max_groups then
        group = OTHER
      end
    end
    if redis.call("HINCRBY", index.counts, group, 1) == 1 then
      redis.call("HSET", index.samples, group, sample)
      redis.call("HSET", index.first, group, ARGV[i + 1])
      redis.call("HSET", index.last, group, ARGV[i + 1])
    else
      if finished < (tonumber(redis.call("HGET", index.first, group)) or math.huge) then
        redis.call("HSET", index.first, group, ARGV[i + 1])
      end
      if finished > (tonumber(redis.call("HGET", index.last, group)) or 0) then
        redis.call("HSET", index.last, group, ARGV[i + 1])
      end
    end
    redis.call("ZADD", group_base .. group, finished, job_id)
    redis.call("HSET", index.jobs, job_id, group)
    redis.call("HINCRBY", index.state, "total", 1)
    added = added + 1
  end
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
