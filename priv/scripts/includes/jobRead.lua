--- @include "numbers"
--- @include "wrongType"

-- Reads the fields named by `...` of the job at `job_key` in one HMGET and
-- answers why the job cannot be moved, or nil and the HMGET answer (value or
-- false per name). The first two names are "name" and "timestamp", which
-- every writer sets when it adds a job; names 3 .. last_number are fields
-- the script does arithmetic on (finite numbers when present), names
-- last_number + 1 .. last_counter fields it increments (integers when
-- present), the rest fields it only wants read. The reasons, turned into words by the
-- runtime (queues/errors.py):
--   "missing"      no key at all
--   "type:<t>"     the key holds a <t>, not a hash
--   "not_a_job"    a hash with neither name nor timestamp (e.g. a queue's
--                  own `meta` when a job id happens to be "meta")
--   "field:<f>"    field f is present but not a number
-- A sound job costs one HMGET and no table of its own: its pcall answers an
-- error only for a key of another type, and TYPE or EXISTS are asked only
-- then or when name and timestamp are both absent.
local function read_job(job_key, last_number, last_counter, ...)
  local raw = redis.pcall("HMGET", job_key, ...)
  if raw["err"] then
    return "type:" .. key_type(job_key), nil
  end
  if not raw[1] and not raw[2] then
    if redis.call("EXISTS", job_key) == 0 then
      return "missing", nil
    end
    return "not_a_job", nil
  end
  for index = 3, last_number do
    if raw[index] and not as_number(raw[index]) then
      return "field:" .. select(index, ...), nil
    end
  end
  for index = last_number + 1, last_counter do
    if raw[index] and not is_integer_text(raw[index]) then
      return "field:" .. select(index, ...), nil
    end
  end
  return nil, raw
end

-- What a single-job script answers when it left its job alone because the
-- job's keys are broken. Bulk scripts list such jobs as id, reason pairs.
local function broken_reply(reason)
  return {"broken", reason}
end
