-- A job is its hash plus the keys hanging off it; removing a job removes all.
local function remove_job_keys(job_key)
  return redis.call("DEL", job_key, job_key .. ":logs", job_key .. ":lock",
    job_key .. ":dependencies", job_key .. ":processed",
    job_key .. ":failed", job_key .. ":unsuccessful")
end
