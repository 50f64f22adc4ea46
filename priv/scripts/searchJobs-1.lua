#!lua flags=no-writes
--[[
  searchJobs: one short, bounded slice of a search through one state's jobs,
  newest first, read-only. The caller (queues/read/search.py) sizes the slice
  so that one call stays within a few milliseconds, pauses between calls, and
  carries the cursor this returns to the next call: Redis is never held for
  long, and workers beside a search keep their throughput.

  KEYS[1]  the state: a list (wait, paused, active; index 0 is the newest) or
           a sorted set (prioritized, delayed, completed, failed,
           waiting-children; the highest score is the newest)

  ARGV[1]  key prefix "<prefix>:<queue>:" (job hashes are <prefix>:<queue>:<id>)
  ARGV[2]  "list" or "zset": the structure KEYS[1] should be
  ARGV[3]  where this slice starts: for a list the index; for a sorted set
           the score of the last member earlier slices looked at ("+inf" at first)
  ARGV[4]  sorted set only: that last member ("" at first; for a list too)
  ARGV[5]  how many members to look at (1 up)
  ARGV[6]  the job hash field compared: "name", "failedReason" or "data"
  ARGV[7]  how: "contains" (plain substring, no pattern characters),
           "equals" (the whole field), "path" (the JSON value at the path of
           ARGV[11..n] inside the field equals the JSON scalar of ARGV[8])
  ARGV[8]  what: for "path" the expected value as JSON text (a string, number,
           true, false or null); else the text sought, lowercased by the caller
           when ARGV[9] is 1
  ARGV[9]  1 = compare ASCII letters case-insensitively (the field is lowercased)
  ARGV[10] the largest field (bytes) this looks into; a larger one is counted
           as unchecked: lowercasing, scanning or decoding megabytes would hold
           Redis (copying it out, once, costs about a millisecond per 10 MB)
  ARGV[11] how many of this slice's first matches come with the field's text
           around the match ("contains" and "equals"; 0: none): the rows a
           page shows, so a false hit can be seen without opening the job
  ARGV[12] how many bytes of the field around the match (each side; the
           match itself is cut at twice that)
  ARGV[13..n] for "contains" and "equals": more texts, any one of which matches
           (data is JSON text: "é" may be stored as \u00e9, '"' as \")
           for "path": the path's segments (object keys; an array index is
           0-based digits)

  Returns: {looked_at, next_start, next_anchor, length, unchecked, around,
  id, id ...}: how many members this slice looked at, where the next slice
  starts ("" when this one reached the end) and its ARGV[4], the state's
  length now, how many fields were too large to look into, the text around
  the first ARGV[11] matches (a list of {text, offset, match length, cut
  before 0/1, cut after 0/1}, in the ids' order: text is the bytes of the
  field shown, offset where the match starts in it, 0-based; bytes, so a
  cut may split a UTF-8 character; empty for "path"), then the matching
  ids, newest first.
  {"wrongtype", <type>} when KEYS[1] is neither missing nor ARGV[2].
  A job whose hash is gone or is not a hash, or whose data is not JSON, does
  not match. Never a negative code: a search changes nothing and refuses nothing.

  Memory: read-only (no-writes), so it runs when Redis is over maxmemory.

  Events: none.
]]

local key = KEYS[1]
local prefix = ARGV[1]
local structure = ARGV[2]
local count = tonumber(ARGV[5])
local field = ARGV[6]
local how = ARGV[7]
local wanted = ARGV[8]
local fold_case = ARGV[9] == "1"
local max_bytes = tonumber(ARGV[10])
local around_wanted = tonumber(ARGV[11])
local context = tonumber(ARGV[12])

local actual = redis.call("TYPE", key).ok
if actual ~= "none" and actual ~= structure then
  return {"wrongtype", actual}
end

-- The members of this slice, newest first, and where the next slice starts.
local ids, next_start, next_anchor, length = {}, "", "", 0
if structure == "list" then
  local start = tonumber(ARGV[3])
  ids = redis.call("LRANGE", key, start, start + count - 1)
  length = redis.call("LLEN", key)
  if #ids == count then
    next_start = tostring(start + #ids)
  end
else
  -- Go on after the last member looked at, wherever it is now: jobs leaving
  -- the set (retried meanwhile) or arriving must not shift the ones not
  -- looked at yet past the cursor. If it left itself, go on after every
  -- member newer than its score: the few sharing that score are looked at
  -- again (the caller drops repeats) rather than skipped.
  local rank = 0
  if ARGV[3] ~= "+inf" then
    local anchor = ARGV[4]
    local score = redis.call("ZSCORE", key, anchor)
    if score and tonumber(score) == tonumber(ARGV[3]) then
      rank = redis.call("ZREVRANK", key, anchor) + 1
    else
      rank = redis.call("ZCOUNT", key, "(" .. ARGV[3], "+inf")
    end
  end
  local scored = redis.call("ZREVRANGE", key, rank, rank + count - 1, "WITHSCORES")
  length = redis.call("ZCARD", key)
  for i = 1, #scored, 2 do
    ids[#ids + 1] = scored[i]
  end
  if #ids == count then
    next_start = scored[#scored]
    next_anchor = scored[#scored - 1]
  end
end

local texts = {wanted}
for i = 13, #ARGV do
  texts[#texts + 1] = ARGV[i]
end

-- Each matcher answers where the match is (first and last byte), or nil;
-- "path" has no place in the text: 0, 0.
local function contains(value)
  for _, text in ipairs(texts) do
    local first, last = string.find(value, text, 1, true)
    if first then
      return first, last
    end
  end
  return nil
end

local function equals(value)
  for _, text in ipairs(texts) do
    if value == text then
      return 1, #value
    end
  end
  return nil
end

local expected
if how == "path" then
  expected = cjson.decode(wanted)
end

-- The JSON value at the path, or nil when the path leads nowhere.
local function at_path(document)
  local node = document
  for i = 13, #ARGV do
    if type(node) ~= "table" then
      return nil
    end
    local segment = ARGV[i]
    local child = node[segment]
    if child == nil and string.match(segment, "^%d+$") then
      child = node[tonumber(segment) + 1]
    end
    node = child
  end
  return node
end

local function path_matches(value)
  local ok, document = pcall(cjson.decode, value)
  if not ok then
    return false
  end
  local found = at_path(document)
  if found ~= nil and type(found) == type(expected) and found == expected then
    return 0, 0
  end
  return nil
end

-- The field's text around a match: `context` bytes each side, the match cut
-- at twice that, so one is at most 4 * ARGV[12] bytes whatever the field holds.
local function around(value, first, last)
  last = math.min(last, first + 2 * context - 1)
  local from = math.max(1, first - context)
  local to = math.min(#value, last + context)
  return {string.sub(value, from, to), first - from, last - first + 1,
    from > 1 and 1 or 0, to < #value and 1 or 0}
end

local matches = how == "contains" and contains or how == "equals" and equals or path_matches
local texts_around = {}
local answer = {0, next_start, next_anchor, length, 0, texts_around}
local unchecked = 0
for _, id in ipairs(ids) do
  -- pcall: a job key of another type (a writer's garbage) does not match.
  local value = redis.pcall("HGET", prefix .. id, field)
  if type(value) == "string" and #value > max_bytes then
    unchecked = unchecked + 1
  elseif type(value) == "string" then
    -- Lowercasing keeps every byte where it was: the match is at the same
    -- place in the field as stored, which is what is shown.
    local first, last = matches(fold_case and string.lower(value) or value)
    if first then
      answer[#answer + 1] = id
      if #texts_around < around_wanted and first > 0 then
        texts_around[#texts_around + 1] = around(value, first, last)
      end
    end
  end
end
answer[1] = #ids
answer[5] = unchecked
return answer
