-- Not included by scripts: queues/scripts.py puts this in front of every
-- script that may not run over maxmemory, in the sources it sends to servers
-- without script flags (Redis < 7). Such a server refuses a script only at a
-- first write that may grow memory; a script whose first write is a removal
-- then writes on past the limit. So the script asks first, as Redis 7 does
-- for a flagged script: used memory, less what eviction does not count
-- (replication and AOF buffers), above maxmemory. Redis has already evicted
-- what its policy allows before the script started, so still being above
-- means full. The refusal reads like Redis's own, so callers see one error.
do
  local info = redis.call("INFO", "memory")
  local limit = tonumber(string.match(info, "\r\nmaxmemory:(%d+)"))
  if limit and limit > 0 then
    local used = tonumber(string.match(info, "\r\nused_memory:(%d+)")) or 0
    local uncounted = tonumber(string.match(info, "\r\nmem_not_counted_for_evict:(%d+)")) or 0
    if used - uncounted > limit then
      return redis.error_reply("OOM command not allowed when used memory > 'maxmemory'.")
    end
  end
end
