-- Finding which state holds a job when the caller does not know it.
-- `states` is an array of {name = <state name>, key = <key>, list = <bool>};
-- sorted sets come first in callers' arrays because ZSCORE is O(1) while
-- LPOS walks the list.
local function locate_job(states, job_id)
  for _, state in ipairs(states) do
    local hit
    if state.list then
      hit = redis.call("LPOS", state.key, job_id)
    else
      hit = redis.call("ZSCORE", state.key, job_id)
    end
    if hit then
      return state
    end
  end
  return nil
end

local function take_job_out(state, job_id)
  if state.list then
    redis.call("LREM", state.key, 1, job_id)
  else
    redis.call("ZREM", state.key, job_id)
  end
end
