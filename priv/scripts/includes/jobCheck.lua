--- @include "jobRead"

-- A checker for the jobs a script moves: `numbers` are the fields it does
-- arithmetic on, `counters` the fields it increments in Redis, `also`
-- (optional) more fields it wants read in the same call. Returns the
-- checker (job key -> read_job's answer) and `at`, where each field sits in
-- the checker's answer (name -> index). Built once per call so a batch of
-- jobs shares one field list (retry-all checks 100,000 jobs).
local function job_checker(numbers, counters, also)
  local names, at = {"name", "timestamp"}, {name = 1, timestamp = 2}
  for _, list in ipairs({numbers, counters, also or {}}) do
    for _, field in ipairs(list) do
      names[#names + 1] = field
      at[field] = at[field] or #names
    end
  end
  local last_number = 2 + #numbers
  local last_counter = last_number + #counters
  local check = function(job_key)
    return read_job(job_key, last_number, last_counter, unpack(names))
  end
  return check, at
end

-- A key hanging off a job (`<job key>:lock`, `:logs` ...) that the script
-- will write: nil when it is missing or of the wanted type, else the reason
-- "key:<suffix>".
local function job_key_problem(job_key, suffix, want)
  local actual = key_type(job_key .. ":" .. suffix)
  if actual == "none" or actual == want then
    return nil
  end
  return "key:" .. suffix
end

-- The refusal of a single-job script for the job at `job_key`: -1 when its
-- hash is gone, {"broken", reason} when its keys are broken, nil when it may
-- be moved. `counters` as for job_checker.
local function job_refusal(job_key, counters)
  local problem = job_checker({}, counters)(job_key)
  if problem == "missing" then
    return -1
  end
  if problem then
    return broken_reply(problem)
  end
  return nil
end
