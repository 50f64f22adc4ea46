#!lua flags=no-writes
--[[
  jobRows: the fields a job list shows, for a page of jobs, in one call,
  read-only. A page of 50 rows as 50 pipelined HMGETs cost the dashboard's
  client most of the list's Redis time (packing and parsing 50 commands);
  one call with one nested reply costs a third of it.

  KEYS: none. Every job hash read is ARGV[1] .. id, so call this only where
  all of them live on one node (a single Redis server; a cluster reader
  uses a pipeline of HMGETs instead).

  ARGV[1]  key prefix "<prefix>:<queue>:" (job hashes are <prefix>:<queue>:<id>)
  ARGV[2]  how many fields follow (F)
  ARGV[3..2+F]  the fields, as HMGET takes them
  ARGV[3+F..n]  the job ids, in the order the page shows them

  Returns: per id, in ARGV order, the HMGET reply (F values, nil where the
  field is absent); an empty list for a key of the wrong type (another
  writer's garbage), which the reader shows as a missing job.

  Memory: read-only (no-writes), so it runs when Redis is over maxmemory.

  Events: none.
]]

local base = ARGV[1]
local count = tonumber(ARGV[2])
local fields = {}
for i = 1, count do
  fields[i] = ARGV[2 + i]
end

local rows = {}
for i = 3 + count, #ARGV do
  local reply = redis.pcall("HMGET", base .. ARGV[i], unpack(fields))
  if type(reply) == "table" and reply.err then
    reply = {}
  end
  rows[#rows + 1] = reply
end
return rows
