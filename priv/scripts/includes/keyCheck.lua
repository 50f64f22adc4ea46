--- @include "numbers"

-- Lua does not roll back: once a script has written, a command that fails (a
-- key of the wrong type, a counter that is not a number) leaves the earlier
-- writes in place, e.g. a job taken out of `failed` and never put in `wait`.
-- So every script checks what it will touch before its first write, with
-- these helpers, and a script that cannot go on has changed nothing.

local function key_type(key)
  return redis.call("TYPE", key)["ok"]
end

-- One O(1) read per type that fails on a key of any other type (and reads
-- a missing key as empty): twice as cheap as TYPE, which answers a table,
-- and the worker's finish checks thirteen keys per job.
local PROBE = {list = "LLEN", zset = "ZCARD", hash = "HLEN", set = "SCARD", stream = "XLEN",
  string = "STRLEN", counter = "GET"}

-- Whole-queue structures. `expected` is a flat array key, type, key, type
-- ..., type being one of Redis's (list, zset, hash, set, stream, string) or
-- "counter" (a string INCR can count on). A missing key is fine: the first
-- write creates it. Answers the error reply to return, or nil. A structure
-- of the wrong type cannot be worked around (a `failed` that is a string
-- holds no failed jobs), so the whole call is refused; the message names the
-- key for whoever repairs it, and the runtime parses it (queues/errors.py).
local function structure_refusal(expected)
  for index = 1, #expected, 2 do
    local key, want = expected[index], expected[index + 1]
    local probed = redis.pcall(PROBE[want], key)
    local wrong = nil
    if type(probed) == "table" and probed["err"] then
      wrong = key_type(key)
    elseif want == "counter" and probed and not is_integer_text(probed) then
      wrong = "string that is not an integer"
    end
    if wrong then
      return redis.error_reply("WRONGTYPE key " .. key .. " holds a " .. wrong
        .. ", expected a " .. want .. "; nothing was changed")
    end
  end
  return nil
end

-- Adds a key and the type it must have to a structure_refusal list.
local function expect(expected, key, want)
  expected[#expected + 1] = key
  expected[#expected + 1] = want
end

-- A checker for the jobs a script moves: `numbers` are the fields it does
-- arithmetic on (finite numbers when present), `counters` the fields it
-- increments in Redis (integers when present), `also` (optional) more fields
-- it wants read in the same call. Returns the checker and `at`, where each
-- field sits in the checker's answer (name -> index). The checker answers
-- why the job at a key cannot be moved, or nil and the fields it read (an
-- HMGET answer: value or false, at[field]). The reasons, turned into words
-- by the runtime (queues/errors.py):
--   "missing"      no key at all
--   "type:<t>"     the key holds a <t>, not a hash
--   "not_a_job"    a hash with neither name nor timestamp, which every writer
--                  sets when it adds a job (e.g. a queue's own `meta` when a
--                  job id happens to be "meta")
--   "field:<f>"    field f is present but not a number
-- Built once per call so a batch of jobs shares one field list. A sound job
-- costs one HMGET and no table of its own (retry-all checks 100,000 jobs):
-- its pcall answers an error only for a key of another type, and TYPE or
-- EXISTS are asked only then or when name and timestamp are both absent.
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
    local raw = redis.pcall("HMGET", job_key, unpack(names))
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
        return "field:" .. names[index], nil
      end
    end
    for index = last_number + 1, last_counter do
      if raw[index] and not is_integer_text(raw[index]) then
        return "field:" .. names[index], nil
      end
    end
    return nil, raw
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

-- What a single-job script answers when it left its job alone because the
-- job's keys are broken. Bulk scripts list such jobs as id, reason pairs.
local function broken_reply(reason)
  return {"broken", reason}
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
