"""Finding queues: by their keys (a paced SCAN walk) and by their workers'
connection names (CLIENT LIST), against a real Redis."""

from __future__ import annotations

import base64
import time
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from redis import Redis
from redis.exceptions import ConnectionError as RedisConnectionError

from queues import discovery
from queues.connection import connect
from queues.read.refs import QueueRef


@pytest.fixture(autouse=True)
def _fresh_discovery() -> Iterator[None]:
    discovery.clear_discovery_cache()
    yield
    discovery.clear_discovery_cache()


def names(client: Redis, prefixes: tuple[str, ...] = ("bull",)) -> list[str]:
    return [ref.qualified for ref in discovery.discover_queues(client, prefixes)]


def eventually(check: Callable[[], bool], timeout: float = 5.0) -> None:
    deadline = time.monotonic() + timeout
    while not check():
        assert time.monotonic() < deadline, "never happened"
        time.sleep(0.02)


def test_queues_are_found_by_meta_or_id_under_the_served_prefixes_only(
    redis_client: Redis,
) -> None:
    redis_client.hset("bull:emails:meta", "opts.maxLenEvents", 10)
    redis_client.set("bull:reports:id", 3)
    redis_client.set("other:hidden:id", 1)
    redis_client.hset("bull:reports:metrics:failed", "count", 1)  # matches the glob, not a queue
    redis_client.hset("bull:emails:42", "name", "x")  # a job hash
    found = discovery.discover_queues(redis_client, ["bull"], [QueueRef("bull", "configured")])
    assert [r.qualified for r in found] == ["bull:configured", "bull:emails", "bull:reports"]


def test_a_queue_with_jobs_but_no_meta_or_id_key_is_found_by_its_states(
    redis_client: Redis,
) -> None:
    """Another tool's queue, or ours after a hand DEL of meta and id: any key
    state holding its jobs makes it a queue; a job's own keys, the metrics and
    a scheduler's keys do not make one of their job or of themselves."""
    for state, key in [
        ("failed", "bull:imports:failed"),
        ("delayed", "bull:reminders:delayed"),
        ("waiting-children", "bull:reports:waiting-children"),
        ("completed", "bull:thumbs:completed"),
    ]:
        redis_client.zadd(key, {"7": 1_764_905_000_000})
        redis_client.hset(key.rsplit(":", 1)[0] + ":7", "name", state)
    redis_client.rpush("bull:webhooks:wait", "1")
    redis_client.rpush("bull:sync:paused", "1")
    redis_client.rpush("bull:render:active", "1")
    redis_client.xadd("bull:ignored:events", {"event": "added", "jobId": "1"})  # no job state
    redis_client.hset("bull:ignored:meta-data", "x", 1)
    redis_client.hset("bull:imports:7:dependencies", "bull:imports:8", 1)
    redis_client.zadd("bull:imports:7:failed", {"bull:imports:8": 1})
    redis_client.lpush("bull:imports:metrics:completed", 1)
    refs = [
        QueueRef("bull", name)
        for name in ("imports", "reminders", "reports", "thumbs", "webhooks", "sync", "render")
    ]
    assert names(redis_client) == sorted(ref.qualified for ref in refs)
    assert discovery.queues_exist(redis_client, refs) == [True] * len(refs)
    assert not discovery.queue_exists(redis_client, QueueRef("bull", "ignored"))


def test_a_prefix_with_glob_characters_matches_only_itself(redis_client: Redis) -> None:
    redis_client.set("b[u]ll:a:id", 1)
    redis_client.set("bull:b:id", 1)
    assert names(redis_client, ("b[u]ll",)) == ["b[u]ll:a"]


def test_a_pass_runs_at_most_every_min_pass_s_then_picks_up_new_and_drops_gone_queues(
    redis_client: Redis, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(discovery, "MIN_PASS_S", 0.3)
    redis_client.set("bull:a:id", 1)
    redis_client.set("bull:gone:id", 1)
    assert names(redis_client) == ["bull:a", "bull:gone"]
    redis_client.set("bull:b:id", 1)
    redis_client.delete("bull:gone:id")
    # Between passes the last answer stands: no keyspace walk per request.
    assert names(redis_client) == ["bull:a", "bull:gone"]
    eventually(lambda: names(redis_client) == ["bull:a", "bull:b"])


def test_forgetting_stops_the_background_walk_and_starts_over(redis_client: Redis) -> None:
    redis_client.set("bull:a:id", 1)
    first = discovery.discovery_for(redis_client, ["bull"])
    redis_client.set("bull:b:id", 1)
    assert names(redis_client) == ["bull:a"]
    discovery.clear_discovery_cache()
    assert names(redis_client) == ["bull:a", "bull:b"]
    assert first._thread is not None
    first._thread.join(timeout=5)
    assert not first._thread.is_alive()


@pytest.mark.parametrize(
    ("connection_name", "queue"),
    [
        ("bull:" + base64.b64encode(b"payments").decode(), "payments"),  # BullMQ (Node.js)
        ("bull:" + base64.b64encode(b"payments").decode() + ":w:billing-1", "payments"),
        ("bull:payments:w:billing-1", "payments"),  # the Python port names it in plain text
        ("bull:" + base64.b64encode(b"payments").decode() + ":qe", "payments"),  # QueueEvents
    ],
)
def test_a_large_keyspace_shows_the_queues_of_connected_workers_before_any_walk(
    redis_client: Redis,
    redis_url: str,
    monkeypatch: pytest.MonkeyPatch,
    connection_name: str,
    queue: str,
) -> None:
    # Treat the keyspace as large: nothing is walked on first use, and the
    # background walk never starts (a slowed one still made its first SCAN call
    # at once, and sometimes found the unconnected queue first: a flaky test).
    monkeypatch.setattr(discovery, "SMALL_KEYSPACE", 0)
    monkeypatch.setattr(discovery.Discovery, "_run", lambda self, walked: self._stop.wait())
    redis_client.set(f"bull:{queue}:id", 1)
    redis_client.set("bull:unconnected:id", 1)
    worker = connect(redis_url, client_name=connection_name)
    worker.ping()
    idle = connect(redis_url, client_name="bull:" + base64.b64encode(b"nothing").decode())
    idle.ping()  # names a queue that has no keys: not shown
    try:
        assert names(redis_client) == [f"bull:{queue}"]
    finally:
        worker.close()
        idle.close()


def test_connection_names_from_other_prefixes_or_garbage_are_ignored() -> None:
    assert discovery.queues_named_by_connection("other:cGF5bWVudHM=", ["bull"]) == []
    assert discovery.queues_named_by_connection("bull:", ["bull"]) == []
    found = discovery.queues_named_by_connection("bull:cGF5bWVudHM=:w:x", ["bull"])
    # "cGF5bWVudHM=" is not a valid queue name ("=" is allowed, so it may be one); its
    # decoding is: the caller keeps whichever exists.
    assert QueueRef("bull", "payments") in found


def test_unreachable_redis_at_first_use_raises_and_the_next_call_tries_again() -> None:
    dead = connect("redis://127.0.0.1:1/0", socket_connect_timeout=0.2)
    with pytest.raises(RedisConnectionError):
        discovery.discover_queues(dead, ["bull"])
    # Nothing half-started is kept for that client: the next call starts over.
    assert (id(dead), ("bull",)) not in discovery._registry


def test_the_background_walk_survives_a_cluster_error_and_walks_again(
    redis_client: Redis, monkeypatch: pytest.MonkeyPatch
) -> None:
    """redis-py's cluster errors are no RedisError: one ended the thread, and the
    queues it would have found next were never found (a test's teardown caught
    the thread's death)."""
    from redis.exceptions import RedisClusterException

    monkeypatch.setattr(discovery, "MIN_PASS_S", 0.05)
    # The first pass runs in start() itself; the thread's first one fails.
    failures = iter([None, RedisClusterException("no node reachable")])
    walker = discovery.Discovery(redis_client, ["bull"])
    real_pass = walker.scan_pass

    def failing_once(*, duty: float | None = None) -> None:
        error = next(failures, None)
        if error is not None:
            raise error
        real_pass(duty=duty)

    monkeypatch.setattr(walker, "scan_pass", failing_once)
    try:
        walker.start()
        redis_client.set("bull:late:id", 1)
        eventually(lambda: QueueRef("bull", "late") in walker.queues())
        assert walker._thread is not None
        assert walker._thread.is_alive()
    finally:
        walker.stop()


def test_a_cluster_that_knows_no_node_keeps_the_queues_found_and_walks_again(
    redis_client: Redis, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A cluster client that lost every node lists no primary: the pass used to
    index an empty list of targets (IndexError, outside the outage errors), and
    the walk's thread died for the life of the process (seen in CI's log)."""
    monkeypatch.setattr(discovery, "MIN_PASS_S", 0.05)
    redis_client.set("bull:early:id", 1)
    walker = discovery.Discovery(redis_client, ["bull"])
    real_nodes = discovery._nodes
    outage = {"on": False}
    monkeypatch.setattr(
        discovery, "_nodes", lambda client: [] if outage["on"] else real_nodes(client)
    )
    try:
        walker.start()  # the first pass runs here, on a reachable server
        assert QueueRef("bull", "early") in walker.queues()
        outage["on"] = True
        passes = walker.last_pass_calls, walker.last_pass_s
        time.sleep(0.3)  # several passes' worth of the outage
        assert walker._thread is not None
        assert walker._thread.is_alive()
        assert QueueRef("bull", "early") in walker.queues()  # not emptied by the outage
        assert (walker.last_pass_calls, walker.last_pass_s) == passes  # no pass completed
        outage["on"] = False
        redis_client.set("bull:late:id", 1)
        eventually(lambda: QueueRef("bull", "late") in walker.queues())
    finally:
        walker.stop()


def test_a_scan_call_that_looked_slow_pauses_the_walk_at_most_max_pause_s(
    redis_client: Redis, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The pause after a call is a multiple of the call's wall time, which in a
    busy server holds GIL waits: one slow-looking call paused the walk for tens
    of seconds, and a new queue was not shown for that long."""
    monkeypatch.setattr(discovery, "MIN_PASS_S", 0.05)
    monkeypatch.setattr(discovery, "SCAN_DUTY", 0.001)  # a 0.1 s call: 100 s of pause
    monkeypatch.setattr(discovery, "MAX_PAUSE_S", 0.2)
    real_step = discovery._Walk.step

    def slow_step(self: Any, client: Redis, prefixes: Any) -> bool:
        time.sleep(0.1)
        return real_step(self, client, prefixes)

    monkeypatch.setattr(discovery._Walk, "step", slow_step)
    walker = discovery.Discovery(redis_client, ["bull"])
    try:
        walker.start()
        redis_client.set("bull:late:id", 1)
        eventually(lambda: QueueRef("bull", "late") in walker.queues(), timeout=3.0)
    finally:
        walker.stop()
