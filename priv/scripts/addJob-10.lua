--[[
  addJob: store a new job and make it ready, delayed or prioritized.

  KEYS[1]  wait            list
  KEYS[2]  paused          list (5.x: holds ready jobs while the queue is paused)
  KEYS[3]  meta            hash
  KEYS[4]  id              string, INCR on every call (custom id or not)
  KEYS[5]  delayed         zset
  KEYS[6]  prioritized     zset
  KEYS[7]  pc              string, priority counter
  KEYS[8]  active          list (read for the global concurrency check)
  KEYS[9]  events          stream
  KEYS[10] marker          zset

  ARGV[1]  key prefix "<prefix>:<queue>:"
  ARGV[2]  custom job id, "" to use the counter
  ARGV[3]  job name
  ARGV[4]  data (JSON text, stored as given)
  ARGV[5]  opts (JSON text, stored as given)
  ARGV[6]  timestamp (ms)
  ARGV[7]  delay (ms, relative; 0 = none)
  ARGV[8]  priority (0 = none, 1..2^21)
  ARGV[9]  lifo "1" / "0"
  ARGV[10] deduplication id, "" = none
  ARGV[11] deduplication ttl (ms, 0 = until the key is removed)
  ARGV[12] parent job key, "" = none (flows across queues need one hash tag on a cluster)
  ARGV[13] parent JSON {id, queueKey, ...}, "" = none

  Returns: the job id (text): the new job's, or the existing one's when the
  custom id is taken or the deduplication id is held. -5 when the parent is gone.

  Events: added (jobId, name) then waiting (jobId) or delayed (jobId, delay =
  absolute due time); duplicated (jobId) for a taken custom id; deduplicated
  (jobId = the kept job, deduplicationId, deduplicatedJobId = the refused id).
]]
--- @include "emitEvent"
--- @include "readyTarget"
--- @include "delayedScore"

local prefix = ARGV[1]
local custom_id = ARGV[2]
local name = ARGV[3]
local timestamp = tonumber(ARGV[6])
local delay = tonumber(ARGV[7]) or 0
local priority = tonumber(ARGV[8]) or 0
local dedup_id = ARGV[10]
local parent_key = ARGV[12]

if parent_key ~= "" and redis.call("EXISTS", parent_key) == 0 then
  return -5
end

-- The counter moves on every add so ids stay unique across writers that mix
-- generated and custom ids (BullMQ does the same).
local counter = redis.call("INCR", KEYS[4])
local job_id = custom_id ~= "" and custom_id or tostring(counter)
local job_key = prefix .. job_id
local cap = events_cap(KEYS[3])

if custom_id ~= "" and redis.call("EXISTS", job_key) == 1 then
  -- The existing job is left exactly as it is.
  emit_event(KEYS[9], cap, "duplicated", "jobId", job_id)
  return job_id
end

if dedup_id ~= "" then
  local dedup_key = prefix .. "de:" .. dedup_id
  local ttl = tonumber(ARGV[11]) or 0
  local claimed
  if ttl > 0 then
    claimed = redis.call("SET", dedup_key, job_id, "PX", ttl, "NX")
  else
    claimed = redis.call("SET", dedup_key, job_id, "NX")
  end
  if not claimed then
    local kept = redis.call("GET", dedup_key)
    emit_event(KEYS[9], cap, "deduplicated", "jobId", kept,
      "deduplicationId", dedup_id, "deduplicatedJobId", job_id)
    return kept
  end
end

local fields = {"name", name, "data", ARGV[4], "opts", ARGV[5], "timestamp", ARGV[6],
  "delay", delay, "priority", priority}
if dedup_id ~= "" then
  fields[#fields + 1] = "deid"
  fields[#fields + 1] = dedup_id
end
if parent_key ~= "" then
  fields[#fields + 1] = "parentKey"
  fields[#fields + 1] = parent_key
  fields[#fields + 1] = "parent"
  fields[#fields + 1] = ARGV[13]
  -- The parent waits for this child until it finishes.
  redis.call("SADD", parent_key .. ":dependencies", job_key)
end
redis.call("HSET", job_key, unpack(fields))
emit_event(KEYS[9], cap, "added", "jobId", job_id, "name", name)

if delay > 0 then
  local due = timestamp + delay
  redis.call("ZADD", KEYS[5], delayed_score(KEYS[5], due), job_id)
  emit_event(KEYS[9], cap, "delayed", "jobId", job_id, "delay", due)
  arm_delayed_marker(KEYS[10], KEYS[5])
else
  local q = {meta = KEYS[3], active = KEYS[8], wait = KEYS[1], paused = KEYS[2],
    prioritized = KEYS[6], pc = KEYS[7], marker = KEYS[10]}
  push_ready(q, job_id, priority, ARGV[9] == "1")
  emit_event(KEYS[9], cap, "waiting", "jobId", job_id)
end

return job_id
