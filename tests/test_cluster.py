"""The same flows on a local 3-node Redis Cluster, with a hash-tagged prefix.

``{bull}`` puts every key of a queue in one slot, so each script (and each
pipeline of the Queue) runs on one node; the clients come from
``queues.connection`` with ``?cluster=1`` in the URL.
"""

from __future__ import annotations

import asyncio
import signal
import time
from typing import Any

import pytest
from redis import Redis
from redis.cluster import RedisCluster

from queues.autopipe import AutoPipeline
from queues.collector import HistoryCollector
from queues.connection import connect, connect_async
from queues.connection_names import queue_name_forms
from queues.events import QueueEvents
from queues.job import Job
from queues.queue import Queue
from queues.read.error_groups import error_groups
from queues.read.history import totals
from queues.read.refs import QueueRef
from queues.read.workers import queue_workers, read_client_list
from tests.dashboard_seed import seed_job
from tests.history_helpers import (
    a_minute_ago_ms,
    collect_until_read,
    idle_collector,
    job_events,
    write_events,
)
from tests.test_crash import LOCK_MS, attempts, started_by, wait_for, worker_processes
from tests.worker_helpers import running, until

pytestmark = pytest.mark.cluster
PREFIX = "{bull}"


@pytest.fixture
def queue(cluster: Redis) -> Queue:
    return Queue("orders", cluster, prefix=PREFIX)


def test_every_key_of_the_queue_is_in_one_slot(cluster: RedisCluster, queue: Queue) -> None:
    keys = queue.keys
    slots = {
        cluster.keyslot(key) for key in (keys.wait, keys.events, keys.job("1"), keys.lock("1"))
    }
    assert len(slots) == 1


async def test_add_and_process_on_the_cluster(cluster_url: str, queue: Queue) -> None:
    ids = queue.add_bulk([("order", {"n": n}, None) for n in range(20)])
    urgent = queue.add("order", {"n": 99}, {"priority": 1})
    later = queue.add("order", {"n": 100}, {"delay": 300})

    async def double(job: Job) -> int:
        return int(job.data["n"]) * 2

    async with running("orders", double, url=cluster_url, prefix=PREFIX, concurrency=5):
        await until(lambda: queue.get_counts("completed")["completed"] == 22)
    for job_id, n in [(ids[3], 3), (urgent, 99), (later, 100)]:
        job = queue.get_job(job_id)
        assert job is not None
        assert job.returnvalue == n * 2
    assert queue.get_counts("wait", "active", "delayed", "prioritized") == {
        "wait": 0, "active": 0, "delayed": 0, "prioritized": 0,
    }  # fmt: skip


async def test_retries_with_backoff_and_by_hand_on_the_cluster(
    cluster_url: str, queue: Queue
) -> None:
    calls: dict[str, int] = {}

    async def fails_first(job: Job) -> str:
        calls[job.id] = calls.get(job.id, 0) + 1
        if calls[job.id] == 1:
            raise RuntimeError("first try fails")
        return "ok"

    with_backoff = queue.add("x", None, {"attempts": 2, "backoff": 100})
    single = queue.add("y", None, {"attempts": 1})
    async with running("orders", fails_first, url=cluster_url, prefix=PREFIX):
        await until(lambda: queue.get_state(with_backoff) == "completed")
        await until(lambda: queue.get_state(single) == "failed")
        queue.retry(single)
        await until(lambda: queue.get_state(single) == "completed")
    assert calls == {with_backoff: 2, single: 2}


async def test_locks_are_renewed_on_the_cluster(cluster_url: str, queue: Queue) -> None:
    job_id = queue.add("slow")

    async def slow(job: Job) -> None:
        # Over twice the lock duration: without renewal the worker's own
        # stalled checker (every 100 ms) would take the job back. A 2 s lock,
        # as tests/test_worker.py's: a 500 ms one lapses under load.
        await asyncio.sleep(4.5)

    async with running(
        "orders",
        slow,
        url=cluster_url,
        prefix=PREFIX,
        lock_duration_ms=2_000,
        stalled_interval_ms=100,
    ):
        await until(lambda: queue.get_state(job_id) == "completed", timeout=20)
    job = queue.get_job(job_id)
    assert job is not None
    assert job.stalled_counter == 0


def test_a_killed_worker_process_is_recovered_on_the_cluster(
    cluster_url: str, cluster: Redis, queue: Queue
) -> None:
    job_id = queue.add("long", {"sleep": 1.0})
    with worker_processes(cluster_url, "orders", PREFIX) as start:
        doomed = start()
        wait_for(lambda: job_id in started_by(cluster, doomed.pid))
        doomed.send_signal(signal.SIGKILL)
        doomed.wait()
        rescuer = start()
        wait_for(lambda: queue.get_state(job_id) == "completed", 20)
    runs = sorted((a for a in attempts(cluster) if a.job_id == job_id), key=lambda a: a.started_ms)
    assert [(a.pid, a.finished_ms is not None) for a in runs] == [
        (doomed.pid, False), (rescuer.pid, True),
    ]  # fmt: skip
    assert runs[1].started_ms >= runs[0].started_ms + LOCK_MS
    job = queue.get_job(job_id)
    assert job is not None
    assert job.stalled_counter == 1


async def test_queue_events_read_the_stream_on_the_cluster(cluster_url: str, queue: Queue) -> None:
    job_id = queue.add("watched")

    async def done(job: Job) -> str:
        return "ok"

    async with running("orders", done, url=cluster_url, prefix=PREFIX):
        await until(lambda: queue.get_state(job_id) == "completed")
    client = connect_async(cluster_url)
    events = QueueEvents("orders", client=client, prefix=PREFIX, last_id="0", block_ms=100)
    names: list[str] = []
    async for event in events:
        names.append(event.event)
        if event.event == "completed":
            break
    await events.close()
    await client.aclose()
    assert names == ["added", "waiting", "active", "completed"]


async def test_the_auto_pipeline_talks_to_the_node_owning_the_queue_slot(
    cluster_url: str, cluster: RedisCluster, queue: Queue
) -> None:
    client = connect_async(cluster_url)
    assert AutoPipeline.for_client(client) is None  # no slot named: no single node to use
    pipe = AutoPipeline.for_client(client, slot_key=queue.keys.wait)
    assert pipe is not None
    assert await pipe.execute("SET", queue.keys.meta + ":probe", "here") == b"OK"
    owner = cluster.get_node_from_key(queue.keys.wait)
    assert pipe._address[:2] == (owner.host, owner.port)
    assert cluster.get(queue.keys.meta + ":probe") == b"here"
    await pipe.close()
    await client.aclose()


async def test_the_auto_pipeline_follows_a_moved_answer(
    cluster: RedisCluster, queue: Queue
) -> None:
    owner = cluster.get_node_from_key(queue.keys.wait)
    other = next(node for node in cluster.get_primaries() if node.port != owner.port)

    async def wrong_node() -> tuple[str, int]:
        return other.host, other.port

    pipe = AutoPipeline(locate=wrong_node)
    assert await pipe.execute("SET", queue.keys.meta + ":probe", "moved") == b"OK"
    assert pipe._address[1] == owner.port
    assert cluster.get(queue.keys.meta + ":probe") == b"moved"
    await pipe.close()


ORDERS = QueueRef("{bull}", "orders")


async def _nothing(job: Job) -> None:
    return None


async def test_workers_connected_to_any_node_are_listed_with_their_node(
    cluster_url: str, cluster: RedisCluster
) -> None:
    nodes = cluster.get_primaries()
    assert len(nodes) == 3
    # A BullMQ-named connection on every node but the queue's own, as bullmq
    # names its per-node clients.
    home = cluster.get_node_from_key(ORDERS.keys.wait)
    others = [node for node in nodes if node.name != home.name]
    peer_name = queue_name_forms(ORDERS.prefix, ORDERS.name)[1] + ":w:peer"
    peers = [Redis(host=node.host, port=node.port, client_name=peer_name) for node in others]
    for peer in peers:
        peer.ping()
    try:
        async with running("orders", _nothing, url=cluster_url, prefix="{bull}", name="echo-1"):

            def listed() -> dict[tuple[str, str | None], int]:
                workers, clients = queue_workers(cluster, ORDERS)
                assert workers is not None, clients.error
                return {(w.name, w.node): w.connections for w in workers}

            # Its pipeline connects first, its blocking connection a moment later.
            await until(lambda: listed().get(("echo-1", home.name)) == 2)
            shown = listed()
    finally:
        for peer in peers:
            peer.close()
    assert {node for (name, node) in shown if name == "peer"} == {n.name for n in others}
    assert read_client_list(cluster).nodes
    assert set(read_client_list(cluster).nodes) >= {n.name for n in nodes}


def test_failures_are_grouped_and_followed_on_the_cluster(cluster: Redis, queue: Queue) -> None:
    """The error groups index (its read, add and drop scripts, the build
    lock, the catch-up) on the node owning the queue's slot: counts exact
    across several add calls, a retry followed."""
    keys, ref = queue.keys, QueueRef(PREFIX, "orders")
    for n in range(600):  # more than one read batch and several add calls
        reason = f"timeout after {30_000 + n} ms on job {n}" if n % 3 else f"user '{n}' gone"
        seed_job(cluster, keys, str(n), state="failed", fields={"failedReason": reason})
    grouped = error_groups(cluster, ref)
    assert grouped.complete
    assert {g.text: g.count for g in grouped.groups} == {
        "timeout after <n> ms on job <n>": 400,
        "user <str> gone": 200,
    }
    queue.retry("1")
    after = error_groups(cluster, ref)
    assert (after.indexed, after.failed) == (599, 599)
    assert {g.text: g.count for g in after.groups}["timeout after <n> ms on job <n>"] == 399


def move_slot(cluster: RedisCluster, key: str) -> None:
    """Move the slot holding ``key`` (and its keys) to another primary, as
    ``redis-cli --cluster reshard`` does: the cluster's clients learn it
    from a MOVED answer."""
    slot = cluster.keyslot(key)
    source = cluster.get_node_from_key(key)
    target = next(node for node in cluster.get_primaries() if node.name != source.name)
    src = Redis(host=source.host, port=source.port)
    dst = Redis(host=target.host, port=target.port)
    src_id, dst_id = (node.execute_command("CLUSTER MYID").decode() for node in (src, dst))
    dst.execute_command("CLUSTER SETSLOT", slot, "IMPORTING", src_id)
    src.execute_command("CLUSTER SETSLOT", slot, "MIGRATING", dst_id)
    while keys := src.execute_command("CLUSTER GETKEYSINSLOT", slot, 100):
        src.execute_command("MIGRATE", target.host, target.port, "", 0, 5000, "KEYS", *keys)
    for node in cluster.get_primaries():
        Redis(host=node.host, port=node.port).execute_command(
            "CLUSTER SETSLOT", slot, "NODE", dst_id
        )
    src.close()
    dst.close()


def test_the_history_collector_reads_each_stream_on_its_node_and_follows_a_moved_slot(
    cluster_url: str, cluster: RedisCluster
) -> None:
    """The collector of the shipped site on a cluster: each queue's events
    stream is read (raw replies) on the primary holding its slot, and a slot
    moved to another node meanwhile is read there from the next pass on, with
    nothing lost or counted twice. On main the collector could not be made:
    a cluster client has no connection_pool."""
    refs = [QueueRef(f"{{q{n}}}", "orders") for n in range(12)]
    nodes = {cluster.get_node_from_key(ref.keys.events).name for ref in refs}
    assert len(nodes) == 3  # the streams sit on every node
    base = a_minute_ago_ms()
    for ref in refs:
        write_events(cluster, ref, [e for n in range(5) for e in job_events(f"{n}", base, 2, 3)])
    collector = HistoryCollector(connect(cluster_url), lambda: refs, name="c", record_every_s=0)
    collect_until_read(collector)
    assert {ref: t.figures.completed for ref, t in totals(cluster, refs).items()} == dict.fromkeys(
        refs, 5
    )

    moved = refs[0]
    before = cluster.get_node_from_key(moved.keys.events).name
    move_slot(cluster, moved.keys.events)
    write_events(cluster, moved, job_events("later", base + 1000, 2, 3, ok=False))
    collect_until_read(collector)
    collect_until_read(collector)  # the pass that met MOVED, then the one on the new node
    after = totals(cluster, [moved])[moved].figures
    assert (after.completed, after.failed, after.run.count) == (5, 1, 6)
    fresh = connect(cluster_url)
    assert fresh.get_node_from_key(moved.keys.events).name != before  # type: ignore[attr-defined]
    fresh.close()
    collector.stop()


def test_when_the_newest_kept_jobs_finished_is_read_across_the_nodes(cluster: Redis) -> None:
    from tests.test_read_model import assert_last_finished, seed_last_finished

    assert_last_finished(cluster, seed_last_finished(cluster, prefix="q"))


def test_the_overview_reads_recent_minutes_of_queues_on_every_node(cluster: Redis) -> None:
    from queues.collector import MINUTE_MS, MinuteBatch, record
    from queues.read.counts import queue_summaries
    from queues.read.history import with_recent_series

    refs = [QueueRef(f"p{n}", "emails") for n in range(6)]  # slots of every node
    now = int(time.time() * 1000)
    for n, ref in enumerate(refs):
        batch = MinuteBatch(now // MINUTE_MS - 1, "1-0")
        batch.add["c"] = n + 1
        record(cluster, ref, "", batch)
    drawn = with_recent_series(cluster, queue_summaries(cluster, refs, now_ms=now), 30)
    assert [summary.completed_per_minute for summary in drawn] == [[n + 1] for n in range(6)]


async def test_live_readers_read_every_slot_with_a_bounded_number_of_readers(
    cluster_url: str, cluster: RedisCluster, settings: Any
) -> None:
    """Queues tagged one by one sit in as many slots: the first BLOCKING_SLOTS
    get blocking readers, the others one polling reader, and an event of
    each reaches its subscriber. On main each slot had readers of its own."""
    from dashboard.live.hub import BLOCKING_SLOTS, POLLED, StreamHub

    settings.REDIS_URL = cluster_url
    refs = [QueueRef(f"{{s{n}}}", "jobs") for n in range(BLOCKING_SLOTS + 3)]
    assert len({cluster.keyslot(ref.keys.events) for ref in refs}) == len(refs)
    reached: set[str] = set()

    class Page:
        bodies = True

        def deliver(self, message: dict[str, Any]) -> None:
            if message["type"] == "live.events":
                reached.add(message["queue"])

    page = Page()
    hub = StreamHub()
    try:
        for ref in refs:
            await hub.acquire(ref.address, page)
        shards = sorted(reader.shard for reader in hub.readers)
        assert len(shards) == BLOCKING_SLOTS + 1
        assert shards[0] == POLLED
        for ref in refs:
            cluster.xadd(ref.keys.events, {"event": "waiting", "jobId": "1"})
        await until(lambda: reached == {ref.address for ref in refs})
    finally:
        await hub.close()


def test_idle_queues_on_a_cluster_cost_one_xread_a_slot_a_pass(
    cluster_url: str, cluster: RedisCluster
) -> None:
    """Each quiet queue's stream was read with an XRANGE every pass on a
    cluster (about 5 a second each): a thousand idle queues were 5,000
    commands a second. Now one XREAD COUNT 1 asks a slot's streams at once."""
    shared = [QueueRef("{idle}", f"q{n}") for n in range(30)]  # one slot
    own = [QueueRef(f"{{own{n}}}", "q") for n in range(3)]  # a slot each
    base = a_minute_ago_ms()
    c = idle_collector(cluster, cluster_url, shared + own, base)

    def stream_commands() -> dict[str, int]:
        stats: Any = cluster.info("commandstats", target_nodes=RedisCluster.PRIMARIES)
        calls = {"xread": 0, "xrange": 0}
        for node in stats.values():
            for name in calls:
                calls[name] += node.get(f"cmdstat_{name}", {}).get("calls", 0)
        return calls

    cluster.config_resetstat(target_nodes=RedisCluster.PRIMARIES)
    assert c.collect_pass() is False
    assert stream_commands() == {"xread": 4, "xrange": 0}
    write_events(cluster, shared[7], job_events("late", base + 100, 5, 5))
    cluster.config_resetstat(target_nodes=RedisCluster.PRIMARIES)
    c.collect_pass()
    assert stream_commands() == {"xread": 4, "xrange": 1}
    assert totals(cluster, [shared[7]])[shared[7]].figures.completed == 2
    c.stop()
