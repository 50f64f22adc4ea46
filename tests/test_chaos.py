"""Chaos: bulk and single actions, with a worker running, over a keyspace with
corrupt keys of every kind (issue 10).

The keyspace holds sound jobs in all eight states plus job keys of the wrong
type, ids without a hash, hashes without job fields, fields and scores that
are no numbers, and ids in two states. While our Worker runs in its own
thread (as another process would), the dashboard's actions run: retry-all,
promote-all, clean, and single retries, promotions, failures and removals.
Afterwards, counted across all eight state structures, every job id is in
exactly one state or was reported as broken, and none of the sound jobs is
lost: each is in exactly one state unless an action deleted it on purpose.
"""

from __future__ import annotations

import asyncio
import random
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import pytest
from redis import Redis

from queues.connection import connect
from queues.errors import JobBroken, ScriptError, SkippedJob
from queues.job import Job
from queues.keys import QueueKeys
from queues.queue import BulkResult, Queue, now_ms
from queues.worker import Worker
from tests.keyspace import placement

NAME = "chaos"


class WorkerThread:
    """Our Worker on its own event loop in a thread, as another process would run it."""

    def __init__(self, url: str, prefix: str) -> None:
        self.url = url
        self.prefix = prefix
        self.ready = threading.Event()
        self.worker: Worker | None = None
        self.loop: asyncio.AbstractEventLoop | None = None
        self.stop: asyncio.Event | None = None
        self.thread = threading.Thread(target=lambda: asyncio.run(self._main()), daemon=True)

    async def _process(self, job: Job) -> Any:
        await asyncio.sleep(0.001)
        if isinstance(job.data, dict) and job.data.get("fail"):
            raise RuntimeError("asked to fail")
        return {"ran": job.id}

    async def _main(self) -> None:
        self.loop = asyncio.get_running_loop()
        self.worker = Worker(
            NAME,
            self._process,
            connection_url=self.url,
            prefix=self.prefix,
            concurrency=8,
            lock_duration_ms=2000,
            stalled_interval_ms=300,
            drain_delay_s=0.1,
        )
        self.stop = stop = asyncio.Event()
        run = asyncio.create_task(self.worker.run())
        self.ready.set()
        await stop.wait()
        await self.worker.close(timeout=5)
        await run

    def __enter__(self) -> WorkerThread:
        self.thread.start()
        assert self.ready.wait(10)
        return self

    def __exit__(self, *exc: object) -> None:
        assert self.loop is not None
        assert self.stop is not None
        self.loop.call_soon_threadsafe(self.stop.set)
        self.thread.join(15)
        assert not self.thread.is_alive()

    @property
    def broken_seen(self) -> dict[str, SkippedJob]:
        assert self.worker is not None
        return dict(self.worker.broken_seen)


@dataclass
class Ledger:
    """What the actions said: the ids reported as broken and the ids deleted."""

    reported: dict[str, str] = field(default_factory=dict)
    deleted: set[str] = field(default_factory=set)

    def bulk(self, result: BulkResult) -> None:
        self.reported.update({i: job.reason for i, job in result.skipped.items()})
        self.deleted.update(result.ids)


def _break(client: Redis, keys: QueueKeys) -> dict[str, list[str]]:
    """Write the corrupt jobs; answers the states each id starts in."""
    base, now = keys.base, now_ms()
    starts: dict[str, list[str]] = {}

    def put(job_id: str, *states: str, score: float | None = None) -> None:
        for state in states:
            if state in ("wait", "paused", "active"):
                client.lpush(keys.state(state), job_id)
            else:
                due = now - 1000 if score is None else score
                client.zadd(keys.state(state), {job_id: due * (4096 if state == "delayed" else 1)})
        starts[job_id] = list(states)

    def sound(job_id: str, **fields: Any) -> None:
        client.hset(
            base + job_id,
            mapping={"name": "n", "data": "{}", "opts": "{}", "timestamp": now - 5000, **fields},
        )

    # Job keys of the wrong type.
    for job_id, state in [("str-f", "failed"), ("str-w", "wait"), ("str-c", "completed")]:
        client.set(base + job_id, "corrupt")
        put(job_id, state)
    client.rpush(base + "list-d", "x")
    put("list-d", "delayed")
    client.sadd(base + "set-p", "x")
    put("set-p", "prioritized", score=2**32)
    client.xadd(base + "stream-a", {"x": "1"})
    put("stream-a", "active")
    # Ids without a hash.
    for job_id, state in [("ghost-f", "failed"), ("ghost-d", "delayed"), ("ghost-w", "wait")]:
        put(job_id, state)
    # Hashes without job fields.
    for job_id, state in [("junk-f", "failed"), ("junk-w", "wait"), ("junk-d", "delayed")]:
        client.hset(base + job_id, "junk", "1")
        put(job_id, state)
    # Fields that are no numbers where a script computes or counts with them.
    sound("prio-f", priority="high")
    put("prio-f", "failed")
    sound("atm-w", atm="x")
    put("atm-w", "wait")
    sound("ats-p", ats="NaN")
    put("ats-p", "prioritized", score=2**32)
    sound("stc-a", stc="often")
    put("stc-a", "active")
    sound("stamp-w", timestamp="soon")
    put("stamp-w", "wait")
    # Scores no writer of that state makes.
    sound("inf-f")
    put("inf-f", "failed", score=float("inf"))
    sound("inf-d")
    put("inf-d", "delayed", score=float("inf"))
    sound("neginf-d")
    put("neginf-d", "delayed", score=float("-inf"))
    # Ids in two states.
    for job_id, states in [
        ("two-fd", ("failed", "delayed")),
        ("two-fw", ("failed", "wait")),
        ("two-cf", ("completed", "failed")),
        ("two-dp", ("delayed", "prioritized")),
    ]:
        sound(job_id)
        put(job_id, *states)
    # A flow whose parent's keys are broken: the child runs, the parent waits.
    sound("parent")
    client.set(base + "parent:dependencies", "not a set")
    put("parent", "waiting-children")
    sound("child", parentKey=base + "parent")
    put("child", "wait")
    return starts


def _seed_sound(queue: Queue) -> dict[str, list[str]]:
    """Sound jobs in every state, as the runtime leaves them."""
    client: Any = queue.connection
    keys, now = queue.keys, now_ms()
    specs: list[tuple[str, Any, Any]] = [("ok", {"i": i}, None) for i in range(150)]
    specs += [("bad", {"fail": True}, None) for _ in range(20)]
    specs += [("later", None, {"delay": 3_600_000}) for _ in range(40)]
    specs += [("soon", None, {"delay": 1}) for _ in range(20)]
    specs += [("urgent", None, {"priority": 2}) for _ in range(20)]
    ids = queue.add_bulk(specs)
    starts = {job_id: [queue.get_state(job_id) or "?"] for job_id in ids}
    # Some of the ready ones failed or completed before the chaos starts.
    pipe = client.pipeline(transaction=False)
    for index, job_id in enumerate(ids[:100]):
        target = "failed" if index % 2 else "completed"
        pipe.lrem(keys.wait, 1, job_id)
        pipe.zadd(keys.state(target), {job_id: now - 10_000 + index})
        pipe.hset(keys.job(job_id), "finishedOn", now - 10_000 + index)
        starts[job_id] = [target]
    # One left active by a worker that died (no lock): the stalled check finds it.
    pipe.lrem(keys.wait, 1, ids[120])
    pipe.lpush(keys.active, ids[120])
    starts[ids[120]] = ["active"]
    pipe.execute()
    return starts


def _act(queue: Queue, ledger: Ledger, rng: random.Random, ids: list[str]) -> None:
    """The dashboard's actions, bulk and single, some on corrupt ids."""
    ledger.bulk(queue.retry_all())
    ledger.bulk(queue.promote_all())
    for job_id in rng.sample(ids, 40):
        action = rng.choice(["retry", "promote", "fail", "remove"])
        try:
            if action == "retry":
                queue.retry(job_id)
            elif action == "promote":
                queue.promote(job_id)
            elif action == "fail":
                queue.fail(job_id, "chaos")
            else:
                queue.remove(job_id)
                ledger.deleted.add(job_id)
        except JobBroken as broken:
            ledger.reported[job_id] = broken.reason
        except ScriptError:
            pass  # not in the state the action starts from: nothing done
        time.sleep(0.005)
    ledger.bulk(queue.clean("completed", grace_ms=0))
    ledger.bulk(queue.retry_all())
    ledger.bulk(queue.promote_all())


def _settled(client: Redis, keys: QueueKeys, known_broken: set[str]) -> bool:
    """Nothing left for the worker: what waits or runs is broken."""
    where = placement(client, keys)
    busy = {i for i, states in where.items() if {"wait", "active", "prioritized"} & set(states)}
    return busy <= known_broken


@pytest.fixture(params=["redis", pytest.param("cluster", marks=pytest.mark.cluster)])
def target(request: pytest.FixtureRequest, redis_url: str) -> Iterator[tuple[str, str]]:
    """(url, prefix): a single Redis, or the local cluster with a hash-tagged prefix."""
    if request.param == "redis":
        yield redis_url, "bull"
        return
    url = request.getfixturevalue("cluster_url")
    yield url, "{bull}"


def test_every_job_ends_in_exactly_one_state_or_reported_and_none_is_lost(
    target: tuple[str, str],
) -> None:
    url, prefix = target
    client = connect(url)
    client.flushall()
    try:
        queue = Queue(NAME, client, prefix=prefix)
        starts = _seed_sound(queue)
        starts.update(_break(client, queue.keys))
        sound_ids = {i for i, s in starts.items() if len(s) == 1 and not _is_corrupt(i)}
        ledger = Ledger()
        rng = random.Random(10)
        with WorkerThread(url, prefix) as worker:
            _act(queue, ledger, rng, sorted(starts))
            deadline = time.monotonic() + 30
            while not _settled(client, queue.keys, set(ledger.reported) | set(worker.broken_seen)):
                assert time.monotonic() < deadline, placement(client, queue.keys)
                time.sleep(0.2)
            time.sleep(0.5)  # one more stalled check and pick-up round
            seen = worker.broken_seen
        reported = set(ledger.reported) | set(seen)
        reasons = [*ledger.reported.values(), *(job.reason for job in seen.values())]
        kinds = {reason.split(":")[0] for reason in reasons}
        assert kinds >= {"type", "missing", "not_a_job", "field", "states"}, reasons
        where = placement(client, queue.keys)

        lost = [i for i in sound_ids - ledger.deleted if len(where.get(i, [])) != 1]
        assert lost == [], {i: (starts[i], where.get(i)) for i in lost}
        for job_id in ledger.deleted:
            assert where.get(job_id, []) == [], job_id
            assert not client.exists(queue.keys.job(job_id))
        unsettled = {
            i: states
            for i, states in where.items()
            if len(states) != 1 and i not in reported and i not in ledger.deleted
        }
        assert unsettled == {}
        # Every corrupt id was met by an action or the worker and reported, or
        # rests in one state (one the workers could run to completion), or an
        # action deleted it (a clean after the worker completed it).
        for job_id in starts:
            if _is_corrupt(job_id) and job_id not in reported | ledger.deleted:
                assert len(where.get(job_id, [])) == 1, job_id
        # The corrupt keys themselves were never rewritten.
        assert client.get(queue.keys.job("str-f")) == b"corrupt"
        if "parent" not in ledger.deleted:
            assert client.get(queue.keys.base + "parent:dependencies") == b"not a set"
        # Nothing moved a job that was reported and stayed: no waiting event for it.
        never_moved = {"str-f", "ghost-f", "junk-f", "prio-f"} - ledger.deleted
        assert never_moved <= reported
        waited = {
            fields[b"jobId"].decode()
            for _, fields in client.xrange(queue.keys.events)
            if fields.get(b"event") == b"waiting"
        }
        assert waited & never_moved == set()
        assert all(where.get(i) == ["failed"] for i in never_moved)
    finally:
        client.flushall()
        client.close()


CORRUPT_PREFIXES = (
    "str-", "list-", "set-", "stream-", "ghost-", "junk-", "prio-", "atm-", "ats-", "stc-",
    "stamp-", "inf-", "neginf-", "two-", "parent", "child",
)  # fmt: skip


def _is_corrupt(job_id: str) -> bool:
    return job_id.startswith(CORRUPT_PREFIXES)
