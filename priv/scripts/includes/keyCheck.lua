--- @include "numbers"

-- Lua does not roll back: once a script has written, a command that fails (a
-- key of the wrong type, a counter that is not a number) leaves the earlier
-- writes in place, e.g. a job taken out of `failed` and never put in `wait`.
-- So every script checks what it will touch before its first write, with
-- these helpers, and a script that cannot go on has changed nothing.

local function key_type(key)
  return redis.call("TYPE", key)["ok"]
end

-- Whole-queue structures. `expected` is an array of {key, type}, type being
-- one of Redis's (list, zset, hash, set, stream, string) or "counter" (a
-- string INCR can count on). A missing key is fine: the first write creates
-- it. Answers the error reply to return, or nil. A structure of the wrong
-- type cannot be worked around (a `failed` that is a string holds no failed
-- jobs), so the whole call is refused; the message names the key for
-- whoever repairs it, and the runtime parses it (queues/errors.py).
local function structure_refusal(expected)
  for _, pair in ipairs(expected) do
    local key, want = pair[1], pair[2]
    local actual = key_type(key)
    local wrong = nil
    if actual == "none" then
      wrong = nil
    elseif want == "counter" then
      if actual ~= "string" then
        wrong = actual
      elseif not is_integer_text(redis.call("GET", key)) then
        wrong = "string that is not an integer"
      end
    elseif actual ~= want then
      wrong = actual
    end
    if wrong then
      return redis.error_reply("WRONGTYPE key " .. key .. " holds a " .. wrong
        .. ", expected a " .. want .. "; nothing was changed")
    end
  end
  return nil
end

-- A checker for the jobs a script moves: `numbers` are the fields it does
-- arithmetic on (finite numbers when present), `counters` the fields it
-- increments in Redis (integers when present), `also` (optional) more fields
-- it wants read in the same call. The checker answers why the job at a key
-- cannot be moved, or nil and the fields it read (name -> value or false). The reasons, turned into words by the runtime (queues/errors.py):
--   "missing"      no key at all
--   "type:<t>"     the key holds a <t>, not a hash
--   "not_a_job"    a hash with neither name nor timestamp, which every writer
--                  sets when it adds a job (e.g. a queue's own `meta` when a
--                  job id happens to be "meta")
--   "field:<f>"    field f is present but not a number
-- Built once per call so a batch of jobs shares one field list.
local function job_checker(numbers, counters, also)
  local names = {"name", "timestamp"}
  for _, list in ipairs({numbers, counters, also or {}}) do
    for _, field in ipairs(list) do
      names[#names + 1] = field
    end
  end
  return function(job_key)
    local kind = key_type(job_key)
    if kind == "none" then
      return "missing", nil
    end
    if kind ~= "hash" then
      return "type:" .. kind, nil
    end
    local raw = redis.call("HMGET", job_key, unpack(names))
    if not raw[1] and not raw[2] then
      return "not_a_job", nil
    end
    local values = {}
    for index, field in ipairs(names) do
      values[field] = raw[index]
    end
    for _, field in ipairs(numbers) do
      if values[field] and not as_number(values[field]) then
        return "field:" .. field, nil
      end
    end
    for _, field in ipairs(counters) do
      if values[field] and not is_integer_text(values[field]) then
        return "field:" .. field, nil
      end
    end
    return nil, values
  end
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
