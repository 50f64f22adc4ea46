#!lua
--[[
  addFlow: add a tree of jobs (a flow) across queues in one atomic call, in
  BullMQ 5.x's layout. A job with children waits in its queue's
  `waiting-children` zset (score = its timestamp) until every child has
  finished; each child names its parent in its hash (`parentKey`, `parent`)
  and is a member of the parent's `<parent key>:dependencies` set. A job
  without children is added exactly as addJob adds it.

  KEYS[1]  meta of the root's queue. Read for nothing but routing: the other
           keys are those of the queues named in ARGV (each node's key
           prefix), as a child's finish reaches its parent by `parentKey`.
           On a cluster every queue of a flow (and the root's own parent)
           must share the prefix's hash tag, so all keys live in one slot.

  ARGV[1]  and on: fourteen arguments per node, parents before their
           children: the node's key prefix "<prefix>:<queue>:", "1" when it
           has children (else "0"), then addJob's ARGV[2] .. ARGV[13]
           (custom id, name, data, opts, timestamp, delay, priority, lifo,
           deduplication id, deduplication ttl, parent key, parent JSON).
           Every node has its id (the runtime makes one when none is
           given); the parent key of a node in the flow names a node given
           before it. Only the first node (the root) may name a parent
           outside the flow.

  Returns: the list of the nodes' ids, in the order given; -5 when the
  root's parent is gone (or is no job a child can wait for: a key of another
  type, a hash without a job's name or timestamp, dependencies that are not
  a set); {"taken", index} when the id of node `index` (1-based) is
  already a job's, the same id comes twice in one queue, or a parent's id
  still has keys hanging off it (`:dependencies`, `:processed`, `:failed`,
  `:unsuccessful`, left over by another writer) the new parent would inherit.
  Refused with a WRONGTYPE error naming the key when a queue structure has
  the wrong type. Every check runs before the first write: a refused flow
  writes nothing.

  Memory: refused when Redis is over maxmemory (no allow-oom flag).

  Events: per node in its queue: added (jobId, name), then waiting-children
  (jobId) for a node with children, else waiting (jobId) or delayed (jobId,
  delay = absolute due time) as addJob.
]]
--- @include "addJobSteps"

local FLOW_NODE_FIELDS = 2 + ADD_JOB_FIELDS

-- The keys of a queue a flow writes, named like addJob's KEYS.
local function queue_keys(base)
  return {base .. "wait", base .. "paused", base .. "meta", base .. "id", base .. "delayed",
    base .. "prioritized", base .. "pc", base .. "active", base .. "events", base .. "marker"}
end

-- Reads every node once: its queue, whether it is a parent, where its
-- addJob arguments start, and its job key.
local nodes, bases = {}, {}
for at = 1, #ARGV, FLOW_NODE_FIELDS do
  local base = ARGV[at]
  local node = {base = base, parent = ARGV[at + 1] == "1", args = at + 2,
    key = base .. ARGV[at + 2], parent_key = ARGV[at + 12]}
  nodes[#nodes + 1] = node
  if not bases[base] then
    bases[base] = true
    bases[#bases + 1] = base
  end
end

-- Checks, in the order of their cost; nothing is written before all pass.
for _, base in ipairs(bases) do
  local refused = add_refusal(queue_keys(base))
    or structure_refusal({base .. "waiting-children", "zset"})
  if refused then
    return refused
  end
end
local seen = {}
for index, node in ipairs(nodes) do
  if seen[node.key] or key_type(node.key) ~= "none" then
    return {"taken", index}
  end
  seen[node.key] = true
  if node.parent then
    for _, suffix in ipairs({"dependencies", "processed", "failed", "unsuccessful"}) do
      if key_type(node.key .. ":" .. suffix) ~= "none" then
        return {"taken", index}
      end
    end
  end
end
-- The root's own parent must be a job: a hash a child can wait on that
-- holds a job's fields (not, say, a queue's `meta` named as a job).
local root = nodes[1]
if root and root.parent_key ~= "" then
  if not parent_can_wait(root.parent_key) then
    return -5
  end
  local fields = redis.call("HMGET", root.parent_key, "name", "timestamp")
  if not fields[1] and not fields[2] then
    return -5
  end
end

-- One add context per queue: the events cap and the ready list are read
-- once per queue, the markers set once per queue at the end.
local contexts = {}
for _, base in ipairs(bases) do
  contexts[base] = add_context(queue_keys(base), base)
end

-- A parent: stored as addJob stores a job, then parked in waiting-children.
local function add_parent(ctx, node)
  local at = node.args
  local name = ARGV[at + 1]
  redis.call("INCR", ctx.id)
  local fields = {"name", name, "data", ARGV[at + 2], "opts", ARGV[at + 3],
    "timestamp", ARGV[at + 4], "delay", tonumber(ARGV[at + 5]) or 0,
    "priority", tonumber(ARGV[at + 6]) or 0}
  if node.parent_key ~= "" then
    fields[#fields + 1] = "parentKey"
    fields[#fields + 1] = node.parent_key
    fields[#fields + 1] = "parent"
    fields[#fields + 1] = ARGV[at + 11]
    redis.call("SADD", node.parent_key .. ":dependencies", node.key)
  end
  redis.call("HSET", node.key, unpack(fields))
  local job_id = ARGV[at]
  redis.call("ZADD", ctx.prefix .. "waiting-children", ARGV[at + 4], job_id)
  emit_event(ctx.events, ctx.cap, "added", "jobId", job_id, "name", name)
  emit_event(ctx.events, ctx.cap, "waiting-children", "jobId", job_id)
  return job_id
end

local ids = {}
for index, node in ipairs(nodes) do
  local ctx = contexts[node.base]
  if node.parent then
    ids[index] = add_parent(ctx, node)
  else
    ids[index] = add_one_job(ctx, ARGV, node.args)
  end
end
for _, base in ipairs(bases) do
  finish_adds(contexts[base])
end
return ids
