-- A worker may only move a job it holds the lock of. Token "0" is the
-- convention for "processed without a lock": no check, nothing to release.
-- Checking is kept apart from releasing so a script can refuse (-2 / -6 / -3)
-- before it changes anything.
local function lock_status(job_key, token)
  if token == "0" then
    return 0
  end
  -- pcall: a lock key of another type (a writer's garbage) is no token of
  -- ours, so it refuses like a lock held by someone else.
  local holder = redis.pcall("GET", job_key .. ":lock")
  if not holder then
    return -2
  end
  if holder ~= token then
    return -6
  end
  return 0
end
