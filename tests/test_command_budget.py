"""What Redis runs per job, pinned (issue 24): the worker's hot path, bulk adds
and retry-all.

Redis is the limit every worker of a queue shares, and in a script each
command costs about the same whatever it does (the call, its reply turned
into Lua and back), so a check added to the per-job path shows up here as a
command per job before it shows up in a benchmark. Each test runs jobs on a
private redis-server (no other test's commands in its ``INFO
commandstats``) and compares the calls per job of every command with the
budgets below. A change that adds a command to a path fails here until its
budget is raised on purpose, with the reason beside it and in the commit.

Budgets allow ``SLACK`` per job for what is not per job: the worker's first
pick-ups and its stalled check, the add scripts' once-per-call checks, this
test's own polling.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

import pytest
from redis import Redis

from queues import scripts
from queues.commands.transitions import move_to_active
from queues.connection import connect
from queues.job import Job
from queues.pickup import decode_answer
from queues.queue import Queue, now_ms
from queues.redis_server import LocalRedisServer, server_binary
from tests.test_queue_admin import finish
from tests.worker_helpers import running, until

JOBS = 1000
SLACK = 0.05

# A busy worker finishing a job (completed, removeOnComplete) and taking the
# next in the same call: moveToFinished with fetch next, its straight-line
# path (priv/scripts/moveToFinished-1.lua).
WORKER_BUDGET = {
    # One script call per job: the finish takes the next job.
    "evalsha": 1,
    # Reads, all before the first write; each proves the type of the key it
    # reads, so nothing the call writes later can fail half-way.
    "hmget": 2,  # the queue's meta, the job's fields
    "exists": 1,  # a completing job's pending or failed children (flows)
    "get": 1,  # the lock the worker must hold
    "sismember": 1,  # the job's stalled mark: proves `stalled`, SREM only when marked
    "zrange": 1,  # the first delayed job: due (the general path promotes), or when next
    "lrange": 1,  # the tail of wait: the next job, and whether another follows
    "hgetall": 1,  # the next job: checked, then its fields are the answer
    # No ZSCORE of the wake-up marker: a finish consumed none and writes none.
    "xlen": 1,  # proves `events`, which no read touches and both XADDs write
    # Writes: the finish, then the start of the next job.
    "lrem": 1,  # out of active (the first write: -3 when not active)
    "del": 1,  # the job and its keys (removeOnComplete), its lock included
    "xadd": 2,  # completed, active
    "rpoplpush": 1,  # the next job from wait to active
    "set": 1,  # its lock
    "hset": 1,  # its processedOn, processedBy and attempts started
}

# A worker with free slots taking a job (moveToActive, the common pick-up):
# what every job costs on a queue whose workers are not all busy.
PICKUP_BUDGET = {
    "evalsha": 1,
    "hmget": 1,  # the queue's meta: paused, concurrency, rate limit, events cap
    "zrange": 1,  # the first delayed job: due, or when next
    "lrange": 1,  # the tail of wait: the job, and whether another follows
    "hgetall": 1,  # the job: checked, then its fields are the answer
    "zscore": 1,  # the wake-up marker, when another job stays ready: proves it
    "xlen": 1,  # proves `events`, which the start's XADD writes
    # No LLEN of active: the move into it is the first write and proves it.
    "rpoplpush": 1,  # from wait to active
    "set": 1,  # its lock
    "xadd": 1,  # active
    "hset": 1,  # processedOn, processedBy, attempts started
}

# Queue.add_bulk of plain jobs: addJobs-10 takes 100 jobs per call.
ADD_BUDGET = {
    "evalsha": 0.01,
    "incr": 1,  # the id counter
    "exists": 1,  # no key has the new id yet (a restored backup, another writer)
    "hset": 1,  # the job hash
    "lpush": 1,  # into wait
    "xadd": 2,  # added, waiting
}

# Queue.retry_all of failed jobs: requeueJobs-13 moves a batch of 1,000 per
# call, pushing and removing the batch's ids in one command each.
RETRY_ALL_BUDGET = {
    "evalsha": 0.01,  # a batch per call, and the one walk of the lists (listedJobs)
    "hmget": 1,  # the job's check, and its failedReason when the caller tracks it
    "hdel": 1,  # its failure (failedReason, finishedOn ...), as the retry clears it
    "xadd": 1,  # waiting
}

# What each requeueJobs call of that retry-all runs once for its whole batch,
# per call: a batch whose every job moves leaves the failed set by rank (the
# ids are the ranks its ZRANGEBYSCORE read, so ZREMRANGEBYRANK finds none
# of them by member: 0.6 against 0.75-1.1 us of Redis a job for ZREM of
# 1,000 members in docs/benchmarks.md, perf3), and the pushes go in one LPUSH.
RETRY_ALL_BATCH_BUDGET = {
    "zrangebyscore": 1,  # the batch's ids
    "zremrangebyrank": 1,  # out of failed, all together
    "zrem": 0,  # by member only when a job of the batch stays (skipped)
    "lpush": 1,  # into wait, all together
    "zcount": 1,  # how many are left beyond the batch
}

# Functions the hot scripts define at their top level, includes inlined:
# each is a closure made on every call (a per-job cost), so these only grow
# on purpose too. The general paths are defined inside a function, only by
# a call that takes them (wrongType.lua's refusal_of among them).
# moveToFinished 11 -> 13: its straight-line and general paths share the
# finish's own steps (includes/finishSteps.lua: settle_finished_job,
# announce_finish) so that each is written once; two closures more per call
# cost nothing bench/runtime.py can see (docs/benchmarks.md, perf3).
DEFINED_BUDGET = {"moveToActive": 9, "moveToFinished": 13}
# Reading these stats and naming connections are not the scripts' commands.
OWN = {"info", "client|setname"}


@pytest.fixture
def private_redis() -> Iterator[tuple[str, Redis]]:
    server = LocalRedisServer(server_binary()[0]).start()
    client = connect(server.url)
    try:
        yield server.url, client
    finally:
        client.close()
        server.stop()


def calls(client: Redis) -> dict[str, int]:
    stats: dict[str, Any] = client.info("commandstats")
    return {name.removeprefix("cmdstat_"): int(s["calls"]) for name, s in stats.items()}


def per_job(
    before: dict[str, int], after: dict[str, int], own: dict[str, int] | None = None
) -> dict[str, float]:
    """Calls per job between two readings, less ``own`` (the test's commands)."""
    own = own or {}
    used = {
        name: (count - before.get(name, 0) - own.get(name, 0)) / JOBS
        for name, count in after.items()
        if name not in OWN
    }
    return {name: round(count, 3) for name, count in used.items() if count > 0}


def over_budget(used: dict[str, float], budget: dict[str, float]) -> dict[str, tuple[float, float]]:
    """Commands used more than their budget (unlisted commands have none)."""
    return {
        name: (count, budget.get(name, 0))
        for name, count in used.items()
        if count > budget.get(name, 0) + SLACK
    }


def _plain_jobs(queue: Queue) -> list[str]:
    return queue.add_bulk([("tiny", {"n": i}, {"removeOnComplete": True}) for i in range(JOBS)])


async def _processing_costs(url: str, client: Redis, queue: Queue) -> dict[str, float]:
    """The calls per job of a worker processing the JOBS ready jobs of
    ``queue`` with a processor that does nothing."""
    seen, polls = 0, 0

    async def noop(job: Job) -> None:
        nonlocal seen
        seen += 1

    def all_finished() -> bool:
        nonlocal polls
        polls += 1
        return client.llen(queue.keys.active) == 0

    before = calls(client)
    # Ten slots: the last ten finishes find nothing to take (their drained
    # check and the next due time are the SLACK), a hundred would be 10%.
    async with running("budget", noop, url=url, concurrency=10):
        await until(lambda: seen == JOBS, timeout=60)
        await until(all_finished, timeout=10)
        return per_job(before, calls(client), own={"llen": polls})


async def test_a_processed_job_costs_one_script_call_and_its_budgeted_commands(
    private_redis: tuple[str, Redis],
) -> None:
    url, client = private_redis
    queue = Queue("budget", client)
    _plain_jobs(queue)
    used = await _processing_costs(url, client, queue)
    assert over_budget(used, WORKER_BUDGET) == {}, used


async def test_a_job_finishing_on_its_second_attempt_stays_on_the_straight_line_paths(
    private_redis: tuple[str, Redis],
) -> None:
    """The jobs a retry sends back (here the dashboard's retry-all after an
    outage failed them all) hold their attempts counts, ``atm`` and ``ats``
    1: picking them up and finishing them on their second attempt costs
    what a first attempt costs. The straight-line paths read those counts,
    and a count they decline sends every retried job down the general path,
    which answers the same at a cost no other budget measures."""
    url, client = private_redis
    queue = Queue("budget", client)
    _plain_jobs(queue)

    async def payment_gateway_down(job: Job) -> None:
        raise ConnectionError("connect ECONNREFUSED 10.0.4.21:443")

    async with running("budget", payment_gateway_down, url=url, concurrency=10):
        await until(lambda: client.zcard(queue.keys.failed) == JOBS, timeout=60)
    assert queue.retry_all().count == JOBS
    assert client.hmget(queue.keys.job("1"), "atm", "ats") == [b"1", b"1"]
    used = await _processing_costs(url, client, queue)
    assert over_budget(used, WORKER_BUDGET) == {}, used


def test_a_job_picked_up_costs_its_budgeted_commands(
    private_redis: tuple[str, Redis],
) -> None:
    _, client = private_redis
    queue = Queue("budget", client)
    _plain_jobs(queue)
    before = calls(client)
    for _ in range(JOBS):
        call = move_to_active(queue.keys, token="tok", lock_duration_ms=30_000, now_ms=now_ms())
        assert decode_answer(scripts.run(client, call), "moveToActive").job_id
    used = per_job(before, calls(client))
    assert over_budget(used, PICKUP_BUDGET) == {}, used


def test_a_job_added_in_bulk_costs_its_budgeted_commands(
    private_redis: tuple[str, Redis],
) -> None:
    _, client = private_redis
    before = calls(client)
    _plain_jobs(Queue("budget", client))
    used = per_job(before, calls(client))
    assert over_budget(used, ADD_BUDGET) == {}, used


def test_a_job_retried_by_retry_all_costs_its_budgeted_commands(
    private_redis: tuple[str, Redis],
) -> None:
    _, client = private_redis
    queue = Queue("budget", client)
    ids = queue.add_bulk([("n", {"i": i}, None) for i in range(JOBS)])
    finish(client, queue, ids, "failed", at=now_ms() - 1000)
    before = calls(client)
    assert queue.retry_all().count == JOBS
    after = calls(client)
    used = per_job(before, after)
    assert over_budget(used, RETRY_ALL_BUDGET) == {}, used
    # One requeueJobs call moves the 1,000 (it answers that none are left),
    # after the one walk of the lists (listedJobs).
    assert after["evalsha"] - before["evalsha"] == 2
    per_batch = {name: after.get(name, 0) - before.get(name, 0) for name in RETRY_ALL_BATCH_BUDGET}
    assert per_batch == RETRY_ALL_BATCH_BUDGET


# Lua's comments and strings, so that the words left are code.
_LUA_NOISE = re.compile(
    r"--\[(=*)\[.*?\]\1\]|--[^\n]*|\[(=*)\[.*?\]\2\]|\"(?:\\.|[^\"\\])*\"|'(?:\\.|[^'\\])*'",
    re.S,
)
# What opens a block closed by `end` (if, do of while and for, function) or
# by `until` (repeat).
_OPENS = {"if", "do", "function", "repeat"}
_CLOSES = {"end", "until"}


def _defined_on_every_call(source: str) -> list[str]:
    """The functions a script defines at its top level (a chunk's top level
    runs on every call; a function's body only when it is called)."""
    words = re.findall(r"[A-Za-z_]\w*", _LUA_NOISE.sub(" ", source))
    defined, depth = [], 0
    for index, word in enumerate(words):
        if depth == 0 and word == "local" and words[index + 1 : index + 2] == ["function"]:
            defined.append(words[index + 2])
        if word in _OPENS:
            depth += 1
        elif word in _CLOSES:
            depth -= 1
    assert depth == 0, "unbalanced blocks: the counter misread the source"
    return defined


def test_the_counter_sees_only_the_top_level() -> None:
    source = """
    local function a() if x then return "end" end end  -- end
    local function b()
      --[[ function c() ]]
      local function hidden() while y do repeat z() until w end end
      for i = 1, 2 do end
    end
    """
    assert _defined_on_every_call(source) == ["a", "b"]


@pytest.mark.parametrize("name", sorted(DEFINED_BUDGET))
def test_the_hot_scripts_define_only_what_their_common_path_runs(name: str) -> None:
    defined = _defined_on_every_call(scripts.load_scripts()[name].source)
    assert len(defined) <= DEFINED_BUDGET[name], defined
