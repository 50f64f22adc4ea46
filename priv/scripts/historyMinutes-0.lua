#!lua flags=no-writes
--[[
  historyMinutes: jobs completed and failed per minute of many queues, from
  the dashboard's metrics history (queues/collector.py writes it), read-only.
  The queue header's hour chart for a queue whose workers keep no BullMQ
  metrics: one call instead of 61 pipelined HMGETs. (The overview's
  sparklines were drawn this way too, and took it back: 31 minutes of 100
  queues cost 15 ms a page, a third of the 1,000-queue overview's budget;
  they read the packed recent minutes recordHistory-4.lua keeps instead.)

  KEYS: none. Every key read derives from a history base in ARGV, so call
  this only where all those keys live on one node (a single Redis server; a
  cluster reader uses a pipeline instead: queues/read/history.py).

  ARGV[1] the first minute (ms since the epoch / 60,000)
  ARGV[2] how many minutes, from the first on (1 up)
  ARGV[3..n] history bases "echomq:history:{<prefix>:<queue>}:", one per queue

  Returns: per queue in ARGV order, per minute oldest first, two integers:
  completed ("c"), failed ("f"). A minute with no hash, a field that is no
  number, or a key of another type (another writer's garbage) reads as 0.

  Memory: read-only (no-writes), so it runs when Redis is over maxmemory.

  Events: none.
]]

local first = tonumber(ARGV[1])
local minutes = tonumber(ARGV[2])

local answer = {}
for i = 3, #ARGV do
  local base = ARGV[i] .. "m:"
  for minute = first, first + minutes - 1 do
    local reply = redis.pcall("HMGET", base .. minute, "c", "f")
    if type(reply) == "table" and not reply.err then
      answer[#answer + 1] = tonumber(reply[1]) or 0
      answer[#answer + 1] = tonumber(reply[2]) or 0
    else
      answer[#answer + 1] = 0
      answer[#answer + 1] = 0
    end
  end
end
return answer
