--- @include "keyCheck"
--- @include "locateJob"

-- The checks of a script that moves or edits one job by hand (failJob,
-- updateData), made before its first write: the job's hash must be sound,
-- exactly one of `states` (from job_states: every state, so an id in two
-- of them is caught) may hold it, and that one must be among `acts_on`
-- (state names). Answers the refusal and nil (-1 the hash is gone;
-- {"broken", reason} its keys are broken or two states hold it; -3 no state
-- it may act on holds it), or nil and the state holding it.
local function job_in_state(job_key, job_id, states, acts_on)
  local refused = job_refusal(job_key, {})
  if refused then
    return refused, nil
  end
  local found = states_holding(states, job_id)
  if #found > 1 then
    return broken_reply(two_states_reason(found)), nil
  end
  local state = found[1]
  for _, name in ipairs(acts_on) do
    if state and state.name == name then
      return nil, state
    end
  end
  return -3, nil
end
