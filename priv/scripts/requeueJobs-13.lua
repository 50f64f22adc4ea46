#!lua
--[[
  requeueJobs: a bounded batch of retry-all (failed/completed -> wait) or
  promote-all (delayed -> wait). The caller repeats the call until nothing is
  left, so no single call blocks Redis for long and no job data leaves Redis.

  KEYS[1]  source set: failed, completed or delayed (zset)
  KEYS[2]  wait
  KEYS[3]  paused
  KEYS[4]  meta
  KEYS[5]  active
  KEYS[6]  prioritized
  KEYS[7]  pc
  KEYS[8]  marker
  KEYS[9]  events
  KEYS[10] completed  } the sorted-set states a job must not also be in
  KEYS[11] failed     } (the one that is the source is passed over)
  KEYS[12] delayed    }
  KEYS[13] waiting-children

  ARGV[1] key prefix "<prefix>:<queue>:"
  ARGV[2] source state name: "failed", "completed" or "delayed" (the event's prev)
  ARGV[3] batch size (> 0): ids looked at by this call
  ARGV[4] highest score to take ("+inf" for all). Retry-all passes the time it
          started so jobs failing again meanwhile are not retried in a loop.
  ARGV[5] ids to pass over first (lowest scores): the ones earlier calls
          reported as broken, which stay at the front of the source set
  ARGV[6] report the jobs moved (optional, default 0): 0 = no; N > 0 = yes,
          each with the first N bytes of the failedReason it held before
          (the retry deletes it). The dashboard records what it moved, to say
          later what became of those jobs; callers that need no ids pass 0.
  ARGV[7] and on (optional): jobs of the source set that a list state holds
          too, as pairs id, that state's name ("wait", "paused", "active"),
          found by listedJobs-4.lua when the action started: they are left
          where they are and reported with the others skipped.

  Returns: {moved, remaining, skipped, reported}: jobs requeued by this call,
  how many qualifying ids lie beyond the ones this call looked at, the jobs
  left where they were because their keys are broken or another state holds
  them too (a sorted set, or a list as ARGV[7] on say), as a flat list id,
  reason, id, reason ... (reasons:
  includes/keyCheck.lua; an id without a hash is reported as "missing"), and
  when ARGV[6] asks for it the jobs requeued, as a flat list id, previous
  failedReason ("" when none), ... (else empty).
  Refused with a WRONGTYPE error naming the key, nothing changed, when one of
  the KEYS has the wrong type.

  Memory: refused when Redis is over maxmemory (no allow-oom flag).

  Events: waiting (jobId, prev = the source state) per job moved.
]]
--- @include "requeueJobs"

local q = requeue_keys(KEYS, ARGV[2])
local refused = requeue_refusal(q)
if refused then
  return refused
end
local max_score = ARGV[4]
local passed = tonumber(ARGV[5]) or 0
local ids = redis.call("ZRANGEBYSCORE", q.source, "-inf", max_score,
  "LIMIT", passed, tonumber(ARGV[3]))
local moved, skipped, reported = requeue_jobs(q, ARGV[1], ids, ARGV[2], listed_in_args(7),
  passed, tonumber(ARGV[6]) or 0)
local beyond = redis.call("ZCOUNT", q.source, "-inf", max_score) - passed - #skipped / 2
return {moved, math.max(beyond, 0), skipped, reported}
