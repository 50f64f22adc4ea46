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

-- A command made with redis.pcall before the script's first write (a read,
-- or that first write itself) proves the key's type for the rest of the
-- call, since nothing else runs meanwhile. Answers the command's answer, or
-- nil and the refusal to return when it failed: a WRONGTYPE names the key's
-- type (`want`: the type the script expects); any other error (the user's
-- ACL refusing the command, Redis out of memory) is answered as Redis gave
-- it, not as a wrong type. One function, not two: the hot scripts pay for
-- each closure they define on every call (tests/test_command_budget.py).
local function call_typed(want, key, command, ...)
  local answer = redis.pcall(command, key, ...)
  if type(answer) == "table" and answer["err"] then
    if string.sub(answer["err"], 1, 9) == "WRONGTYPE" then
      return nil, wrong_type_reply(key, key_type(key), want)
    end
    return nil, answer
  end
  return answer
end
