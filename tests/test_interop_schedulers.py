"""Job schedulers shared with BullMQ: a scheduler written by bullmq 2.20.1's
own scripts runs on our worker, and one written by our runtime runs on
bullmq's worker, run after run, with no run twice and none missed.

bullmq 2.20.1's Python worker processes a scheduler's runs but adds no next
run (BullMQ's Node worker does it when it takes a run, with its
updateJobScheduler script): the peer's processor here runs that installed
script as the Node worker does (tests/scheduler_helpers.py).

That worker also wakes for a delayed job up to a second late (it rounds its
blocking timeout up to whole seconds): a run every 200 ms would be taken
after the next slot had passed, and BullMQ's own script then goes on from the
next slot of the grid, skipping the ones missed, as it is meant to. So on
bullmq's worker the schedules are slower than its wake-up: every 1.5 s, and a
cron every 2 s; on ours, every 200 ms and every second.
"""

from __future__ import annotations

import time
from collections.abc import AsyncIterator
from typing import Any

import bullmq
import pytest
from redis import Redis

from queues import codec
from queues.keys import QueueKeys
from queues.schedulers import JobSchedulers, Repeat
from tests.scheduler_helpers import (
    BullmqSchedulerScripts,
    Runs,
    assert_every_run_once_on_the_grid,
    run_time,
)
from tests.worker_helpers import running, until

pytestmark = [
    pytest.mark.peer,
    # bullmq's worker leaves tasks and connections for the loop's finalizers
    pytest.mark.filterwarnings("ignore::ResourceWarning"),
]

NAME = "cron-shared"
EVERY = 200
EVERY_ON_PEER = 1500
ITERATIONS = 21
KEYS = QueueKeys(NAME)


@pytest.fixture
async def peer_queue(redis_url: str, redis_client: Redis) -> AsyncIterator[bullmq.Queue]:
    queue = bullmq.Queue(NAME, {"connection": redis_url})
    yield queue
    await queue.close()


@pytest.fixture
def theirs(redis_client: Redis) -> BullmqSchedulerScripts:
    return BullmqSchedulerScripts(redis_client, NAME)


@pytest.fixture
def ours(redis_client: Redis) -> JobSchedulers:
    return JobSchedulers(NAME, redis_client)


def iteration_count(client: Redis, scheduler_id: str) -> int:
    return int(client.hget(f"bull:{NAME}:repeat:{scheduler_id}", "ic") or 0)


class PeerRuns:
    """bullmq's processor: records each run, and first adds the next run the
    way BullMQ's Node worker does on taking it. ``next_ms`` computes a cron
    pattern's next run from (now, prevMillis), as cron-parser would; None for
    an every scheduler (the script computes the slot)."""

    def __init__(self, scripts: BullmqSchedulerScripts, next_ms: Any = None) -> None:
        self.scripts = scripts
        self.next_ms = next_ms
        self.ids: list[str] = []
        self.names: set[str] = set()

    async def __call__(self, job: Any, token: str) -> Any:
        self.ids.append(job.id)
        self.names.add(job.name)
        after = max(int(time.time() * 1000), int(job.opts.get("prevMillis") or 0))
        self.scripts.next_run(job, None if self.next_ms is None else self.next_ms(after))
        return {"peer": job.id, "data": job.data}


async def test_a_scheduler_bullmq_wrote_runs_on_our_worker_every_run_once(
    redis_url: str, redis_client: Redis, peer_queue: bullmq.Queue, theirs: BullmqSchedulerScripts
) -> None:
    first = theirs.upsert("beat", name="beat", data={"from": "bullmq"}, every=EVERY)
    runs = Runs()
    async with running(NAME, runs, url=redis_url):
        await until(lambda: len(runs.ids) >= ITERATIONS, timeout=40)
    assert runs.ids[0] == first
    assert_every_run_once_on_the_grid(redis_client, KEYS, runs.ids, EVERY)
    assert iteration_count(redis_client, "beat") == len(runs.ids) + 1
    # bullmq reads what our worker did.
    done = await bullmq.Job.fromId(peer_queue, runs.ids[10])
    assert done.returnvalue == {"run": runs.ids[10]}
    assert done.data == {"from": "bullmq"}
    assert done.repeatJobKey == "beat"
    counts = await peer_queue.getJobCounts("completed")
    assert counts["completed"] >= ITERATIONS
    pending = f"repeat:beat:{int(redis_client.zscore(f'bull:{NAME}:repeat', 'beat') or 0)}"
    assert await peer_queue.getJobState(pending) in ("delayed", "waiting", "active")


async def test_a_scheduler_our_runtime_wrote_runs_on_bullmq_s_worker_every_run_once(
    redis_url: str, redis_client: Redis, ours: JobSchedulers, theirs: BullmqSchedulerScripts
) -> None:
    first = ours.upsert("beat", Repeat(every_ms=EVERY_ON_PEER), name="beat", data={"from": "us"})
    peer = PeerRuns(theirs)
    worker = bullmq.Worker(NAME, peer, {"connection": redis_url, "drainDelay": 1})
    try:
        await until(lambda: len(peer.ids) >= ITERATIONS, timeout=60)
    finally:
        await worker.close()
    assert peer.ids[0] == first
    assert peer.names == {"beat"}
    assert_every_run_once_on_the_grid(redis_client, KEYS, peer.ids, EVERY_ON_PEER)
    assert iteration_count(redis_client, "beat") >= len(peer.ids)
    last = redis_client.hgetall(f"bull:{NAME}:{peer.ids[-2]}")
    assert codec.loads(last[b"returnvalue"]) == {"peer": peer.ids[-2], "data": {"from": "us"}}


def next_whole_second(after_ms: int) -> int:
    """ "* * * * * *" as cron-parser computes it: the next whole second."""
    return (after_ms // 1000 + 1) * 1000


def next_even_second(after_ms: int) -> int:
    """ "*/2 * * * * *" as cron-parser computes it: the next even second."""
    return (after_ms // 2000 + 1) * 2000


async def test_a_per_second_cron_bullmq_wrote_runs_on_our_worker_second_after_second(
    redis_url: str, redis_client: Redis, theirs: BullmqSchedulerScripts
) -> None:
    start = next_whole_second(int(time.time() * 1000))
    theirs.upsert("sec", name="sec", data={}, pattern="* * * * * *", next_ms=start)
    runs = Runs()
    async with running(NAME, runs, url=redis_url):
        await until(lambda: len(runs.ids) >= 4, timeout=20)
    assert run_time(runs.ids[0]) == start
    assert_every_run_once_on_the_grid(redis_client, KEYS, runs.ids, 1000)


async def test_a_two_second_cron_our_runtime_wrote_runs_on_bullmq_s_worker(
    redis_url: str, redis_client: Redis, ours: JobSchedulers, theirs: BullmqSchedulerScripts
) -> None:
    ours.upsert("sec", Repeat(pattern="*/2 * * * * *"), name="sec")
    peer = PeerRuns(theirs, next_ms=next_even_second)
    worker = bullmq.Worker(NAME, peer, {"connection": redis_url, "drainDelay": 1})
    try:
        await until(lambda: len(peer.ids) >= 4, timeout=30)
    finally:
        await worker.close()
    assert all(run_time(job_id) % 2000 == 0 for job_id in peer.ids)
    assert_every_run_once_on_the_grid(redis_client, KEYS, peer.ids, 2000)


async def test_run_now_and_remove_on_a_scheduler_bullmq_wrote_show_through_bullmq_s_api(
    redis_client: Redis,
    peer_queue: bullmq.Queue,
    ours: JobSchedulers,
    theirs: BullmqSchedulerScripts,
) -> None:
    later = int(time.time() * 1000) + 3_600_000
    pending = theirs.upsert(
        "hourly", name="report", data={"to": "ops"}, pattern="0 * * * *", next_ms=later
    )
    extra = ours.run_now("hourly")
    job = await bullmq.Job.fromId(peer_queue, extra)
    assert (job.name, job.data, job.repeatJobKey) == ("report", {"to": "ops"}, None)
    assert await peer_queue.getJobState(extra) == "waiting"
    assert await peer_queue.getJobState(pending) == "delayed"
    removed = ours.remove("hourly")
    assert removed.pending_job_id == pending
    assert await peer_queue.getJobState(pending) == "unknown"
    assert (await peer_queue.getJobCounts("delayed"))["delayed"] == 0
    assert redis_client.zcard(f"bull:{NAME}:repeat") == 0
