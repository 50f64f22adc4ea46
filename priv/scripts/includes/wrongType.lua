-- The refusal of a call that met one of the queue's keys holding another
-- type: an error reply naming the key, which the runtime parses
-- (queues/errors.py). TYPE is asked only here, once something has failed,
-- to tell whoever repairs the key what it holds.

local function key_type(key)
  return redis.call("TYPE", key)["ok"]
end

local function wrong_type_reply(key, actual, want)
  return redis.error_reply("WRONGTYPE key " .. key .. " holds a " .. actual
    .. ", expected a " .. want .. "; nothing was changed")
end

-- What to answer for a failed redis.pcall on `key`: a WRONGTYPE is the
-- key's type, named; any other error (the user's ACL refusing the command,
-- Redis out of memory) is answered as Redis gave it, not as a wrong type.
local function refusal_of(failed, key, want)
  if string.sub(failed["err"], 1, 9) == "WRONGTYPE" then
    return wrong_type_reply(key, key_type(key), want)
  end
  return failed
end

-- A command made with redis.pcall before the script's first write (a read,
-- or that first write itself) proves the key's type for the rest of the
-- call, since nothing else runs meanwhile. Answers the command's answer, or
-- nil and the refusal to return when the key holds another type (`want`:
-- the type the script expects, named in the refusal).
local function call_typed(want, key, command, ...)
  local answer = redis.pcall(command, key, ...)
  if type(answer) == "table" and answer["err"] then
    return nil, refusal_of(answer, key, want)
  end
  return answer
end
