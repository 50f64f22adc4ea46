#!lua flags=allow-oom
--[[
  dropFromErrorGroups: take jobs that are no longer failed (retried,
  removed, cleaned, trimmed) out of the dashboard's error groups index. A
  job still in failed stays, whatever the caller thought: each job is
  checked here, so a job that failed again meanwhile is not lost.

  KEYS[1] failed (zset)
  KEYS[2] index state (hash)
  KEYS[3] index counts (hash: group -> jobs)
  KEYS[4] index samples (hash)
  KEYS[5] index first seen (hash)
  KEYS[6] index last seen (hash)
  KEYS[7] index jobs (hash: job id -> group)

  ARGV[1] group base (see addToErrorGroups)
  ARGV[2] generation read from the index state ("0" when none)
  ARGV[3] events cursor (stream id, "" for none): the state's cursor moves
          forward to it
  ARGV[4..] job ids

  Returns: the number of jobs taken out, or "stale" and nothing changed.
  Refused with a WRONGTYPE error naming the key, nothing changed, when a key
  (a group's zset included) has the wrong type, or when a count it would
  decrement (the count in KEYS[3] of a group it takes a job from, the total
  in KEYS[2]) is not an integer: the index is broken, and the dashboard
  rebuilds it.

  Memory: runs when Redis is over maxmemory (allow-oom): it only frees.

  Events: none.
]]
--- @include "errorGroups"

local failed_key = KEYS[1]
local index = index_keys(2)
local group_base = ARGV[1]

local expected = index_structure(index, {failed_key, "zset"})
local seen = {}
for i = 4, #ARGV do
  expect_groups(expected, seen, group_base, {redis.call("HGET", index.jobs, ARGV[i])})
end
local refused = index_refusal(index, expected, ARGV[2])
if refused then
  return refused
end
local _, not_counts = index_counts(index, seen)
if not_counts then
  return not_counts
end

local dropped = 0
for i = 4, #ARGV do
  local job_id = ARGV[i]
  local group = redis.call("HGET", index.jobs, job_id)
  if group and not redis.call("ZSCORE", failed_key, job_id) then
    unindex_job(index, group_base, group, job_id)
    dropped = dropped + 1
  end
end
advance_cursor(index, ARGV[3])
return dropped
