-- Whether the deduplication key still names this job. A key of another
-- type (a writer's garbage) names nobody, and GET on it would fail after
-- the script's first write, so its type is asked first.
local function dedup_key_names(dedup_key, job_id)
  return redis.call("TYPE", dedup_key)["ok"] == "string" and redis.call("GET", dedup_key) == job_id
end

-- A finished job stops deduplicating new adds. Only a key that still names
-- this job is deleted (a newer job may own the id by now), and a key with its
-- own ttl ("throttle" mode, as in BullMQ) is left to expire on its own.
-- `dedup_id` is the job's `deid` field (false or nil when it has none).
local function release_dedup_id(queue_base, dedup_id, job_id)
  if not dedup_id then
    return
  end
  local dedup_key = queue_base .. "de:" .. dedup_id
  if redis.call("PTTL", dedup_key) == -1 and dedup_key_names(dedup_key, job_id) then
    redis.call("DEL", dedup_key)
  end
end

local function release_dedup_key(queue_base, job_key, job_id)
  release_dedup_id(queue_base, redis.call("HGET", job_key, "deid"), job_id)
end
