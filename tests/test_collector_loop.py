"""The collector's pass on a Redis Cluster, where a pipeline spans several
hash slots of a node: each command goes alone (a MULTI across slots is
refused whole), a group of streams XREAD refuses does not hide the groups
after it, and a slot moved meanwhile is read on its new node. Off a cluster
these paths answer the same whichever way they are written, so only a
cluster tells them apart (docs/mutation-collector.md)."""

from __future__ import annotations

import logging
import socket
import time
from typing import Any

import pytest
from redis import Redis
from redis.cluster import RedisCluster

from queues import collector as collector_module
from queues import collector_report
from queues.collector import MINUTE_MS, HistoryCollector
from queues.connection import connect
from queues.keys import COLLECTOR_LEASE, COLLECTOR_STATUS, HistoryKeys, stopped_history_field
from queues.read.history import totals
from queues.read.refs import QueueRef
from tests.history_helpers import a_minute_ago_ms, collect_until_read, job_events, write_events
from tests.round_trips import counted_sends
from tests.test_cluster import move_slot


def _by_node(cluster: RedisCluster, refs: list[QueueRef]) -> dict[str, list[QueueRef]]:
    nodes: dict[str, list[QueueRef]] = {}
    for ref in refs:
        nodes.setdefault(cluster.get_node_from_key(ref.keys.events).name, []).append(ref)
    return nodes


def _slot_map_reads(cluster: RedisCluster) -> int:
    stats: Any = cluster.info("commandstats", target_nodes=RedisCluster.PRIMARIES)
    return sum(
        calls.get("calls", 0)
        for node in stats.values()
        for name, calls in node.items()
        if name.startswith(("cmdstat_cluster|slots", "cmdstat_cluster|shards"))
    )


@pytest.mark.cluster
def test_a_pass_reads_every_slot_of_a_node_past_a_stream_key_that_is_no_stream(
    cluster_url: str, cluster: RedisCluster
) -> None:
    """Twelve queues of their own slot each, four or so a node: the first
    queue of one node has a string where its events stream belongs (a
    writer's garbage). Every other queue is counted in full: the news check
    goes on to the node's next slots after the group XREAD refused (a break
    there left them unread pass after pass), and every pipelined read goes
    alone (in a MULTI the node refuses the whole EXEC with CROSSSLOT, the
    pass raises and nothing is ever counted)."""
    refs = [QueueRef(f"{{q{n}}}", "orders") for n in range(12)]
    nodes = _by_node(cluster, refs)
    broken, sound = refs[0], refs[1:]
    on_its_node = nodes[cluster.get_node_from_key(broken.keys.events).name]
    assert len(nodes) == 3
    assert len(on_its_node) >= 3  # the broken queue and two sound ones after it
    cluster.set(broken.keys.events, "not a stream")
    base = a_minute_ago_ms()
    for ref in sound:
        write_events(cluster, ref, [e for n in range(5) for e in job_events(f"{n}", base, 2, 3)])
    collector = HistoryCollector(connect(cluster_url), lambda: refs, name="c", record_every_s=0)
    collect_until_read(collector)
    counted = {ref: t.figures.completed for ref, t in totals(cluster, sound).items()}
    assert counted == dict.fromkeys(sound, 5)

    # Passes that meet no MOVED answer ask no slot map: learning the slots
    # anew is one CLUSTER SLOTS a node, which every pass would pay.
    cluster.config_resetstat(target_nodes=RedisCluster.PRIMARIES)
    write_events(cluster, sound[0], job_events("invoice-2290", base + 500, 2, 3))
    collect_until_read(collector)
    assert totals(cluster, [sound[0]])[sound[0]].figures.completed == 6
    assert _slot_map_reads(cluster) == 0

    # A slot moved to another node: the MOVED answer makes the collector
    # learn the slots anew, and the next pass reads the stream there.
    # Not the queue counted once more above: on a cluster whose slots earlier
    # tests moved, it can sit on this node too (then it had 6 completed).
    moved = next(ref for ref in on_its_node if ref not in (broken, sound[0]))
    move_slot(cluster, moved.keys.events)
    write_events(cluster, moved, job_events("invoice-2291", base + 1000, 2, 3, ok=False))
    collect_until_read(collector)
    collect_until_read(collector)
    after = totals(cluster, [moved])[moved].figures
    assert (after.completed, after.failed, after.run.count) == (5, 1, 6)
    collector.stop()


@pytest.mark.cluster
def test_a_busy_pass_reads_each_group_of_queues_mostly_on_one_node(
    cluster_url: str, cluster: RedisCluster, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Thirty queues, each with news on two passes running: the second pass
    reads them ten at a time (QUEUES_PER_READ) in the order of the nodes
    holding them, so a group costs one round trip a node it spans, and the
    pass at most one per group and one per change of node (5). In the order
    of the queue list each group spans every node: 9 round trips."""
    refs = [QueueRef(f"{{shop{n}}}", "orders") for n in range(30)]
    assert len(_by_node(cluster, refs)) == 3
    base = a_minute_ago_ms()
    for ref in refs:
        write_events(cluster, ref, job_events("order-1001", base, 2, 3))
    collector = HistoryCollector(connect(cluster_url), lambda: refs, name="c", record_every_s=0)
    assert collector.step() is False
    assert collector.read_last_pass == 90  # every stream had news: each is read unasked next
    for ref in refs:
        write_events(cluster, ref, job_events("order-1002", base + 1000, 2, 3))
    with counted_sends(monkeypatch) as sent:
        collector.collect_pass()
    assert collector.read_last_pass == 90
    reads = [args for args in sent if b"XRANGE" in b"".join(map(bytes, args[0]))]
    assert len(reads) == 3 + 2
    collector.stop()


class HostClock:
    """``time.monotonic()`` of a host as the collector and its report read
    it: seconds since the host booted, moved by the test in whole steps (a
    coarse clock, as Windows' 15.6 ms one, answers the same value to every
    read within a tick)."""

    def __init__(self, since_boot_s: float) -> None:
        self.at = since_boot_s

    def monotonic(self) -> float:
        return self.at

    @staticmethod
    def time() -> float:
        return time.time()


@pytest.fixture
def host_clock(monkeypatch: pytest.MonkeyPatch) -> HostClock:
    clock = HostClock(4.25)
    monkeypatch.setattr(collector_module, "time", clock)
    monkeypatch.setattr(collector_report, "time", clock)
    return clock


INVOICES = QueueRef("bull", "invoices")


class ListedQueues:
    """The dashboard's queue list (a SCAN of the keyspace), counting how
    often the collector asks for it."""

    def __init__(self) -> None:
        self.asked = 0

    def __call__(self) -> list[QueueRef]:
        self.asked += 1
        return [INVOICES]


def _one_job_written(client: Redis) -> int:
    """The events of one invoice job a minute ago; answers that minute (ms)."""
    base = a_minute_ago_ms()
    write_events(client, INVOICES, job_events("inv-2024-0311", base, 40, 900))
    return base


def _completed(client: Redis) -> int:
    return totals(client, [INVOICES])[INVOICES].figures.completed


def test_a_collector_started_as_the_host_boots_collects_and_records_on_its_first_pass(
    redis_client: Redis, redis_url: str, host_clock: HostClock
) -> None:
    """The dashboard's service starts 4.25 s after the host boots: its
    collector's first pass lists the queues (the list is due from the
    start, whatever the clock reads) and records what it read, saying at
    once who collects, although it records only every 5 s otherwise."""
    list_queues = ListedQueues()
    _one_job_written(redis_client)
    collector = HistoryCollector(connect(redis_url), list_queues, name="web-1", record_every_s=5.0)
    assert collector.step() is False
    assert (list_queues.asked, collector.read_last_pass) == (1, 3)
    assert _completed(redis_client) == 1
    assert redis_client.hget(COLLECTOR_STATUS, "holder") == b"web-1"
    collector.stop()


def test_each_periodic_task_is_done_when_exactly_its_interval_has_gone_by(
    redis_client: Redis, redis_url: str, host_clock: HostClock
) -> None:
    """On a clock read in whole ticks a pass often sees exactly the interval
    gone by: then the record (record_every_s=0: every pass), the lease
    renewal (every 5 s), the queue list and the backlog sample (every 10 s)
    are all due, not put off to a later pass."""
    list_queues = ListedQueues()
    base = _one_job_written(redis_client)
    host_clock.at = 100.0
    collector = HistoryCollector(
        connect(redis_url), list_queues, lease_s=30.0, renew_every_s=5.0, record_every_s=0.0
    )
    collector.step()
    assert _completed(redis_client) == 1
    # The same tick: no time gone by since the last record, and 0 s is due.
    write_events(redis_client, INVOICES, job_events("inv-2024-0312", base + 2000, 40, 900))
    collector.step()
    assert _completed(redis_client) == 2

    time.sleep(0.3)  # the lease's own TTL runs in Redis
    assert redis_client.pttl(COLLECTOR_LEASE) <= 29_750
    host_clock.at = 105.0
    collector.step()
    assert redis_client.pttl(COLLECTOR_LEASE) > 29_750

    host_clock.at = 110.0
    redis_client.config_resetstat()
    collector.step()
    stats = redis_client.info("commandstats")
    assert list_queues.asked == 2
    assert "cmdstat_llen" in stats
    collector.stop()


def test_a_stopped_history_is_tried_again_when_exactly_its_rest_is_over(
    redis_client: Redis, redis_url: str, host_clock: HostClock
) -> None:
    """A queue whose history key a writer broke rests RETRY_S (10 s) and is
    tried again on the pass that finds its rest over, also when that pass
    reads exactly its retry time on the clock (the queue list, read again at
    111 s, is not what brings it back)."""
    history = HistoryKeys(INVOICES.name, INVOICES.prefix)
    base = _one_job_written(redis_client)
    host_clock.at = 100.0
    collector = HistoryCollector(connect(redis_url), lambda: [INVOICES], record_every_s=0.0)
    collector.step()
    assert _completed(redis_client) == 1

    host_clock.at = 103.0  # broken: the history rests until 113 s
    redis_client.delete(history.state)
    redis_client.set(history.state, "garbage")
    write_events(redis_client, INVOICES, job_events("inv-2024-0312", base + 2000, 40, 900))
    collector.step()
    stopped = stopped_history_field(INVOICES.qualified)
    why = f"its key {history.state} holds a string"
    assert redis_client.hget(COLLECTOR_STATUS, stopped) == why.encode()
    host_clock.at = 111.0
    collector.step()
    assert collector.read_last_pass == 0

    redis_client.delete(history.state)  # mended
    host_clock.at = 113.0
    collector.step()
    assert collector.read_last_pass > 0
    collector.stop()


def test_a_gap_is_said_in_the_minute_the_read_after_it_begins_with(
    redis_client: Redis, redis_url: str
) -> None:
    """Events trimmed unread between two passes: the read after them spans
    two minutes, and the gap is said in the first (where the missing events
    were), not in the minute the read ends with."""
    history = HistoryKeys(INVOICES.name, INVOICES.prefix)
    first = a_minute_ago_ms() // MINUTE_MS - 3
    write_events(redis_client, INVOICES, job_events("inv-2024-0311", first * MINUTE_MS, 40, 900))
    collector = HistoryCollector(connect(redis_url), lambda: [INVOICES], record_every_s=0.0)
    collect_until_read(collector)
    burst = [
        e
        for n in range(40)
        for e in job_events(f"inv-2024-04{n:02}", (first + 1) * MINUTE_MS + n * 100, 5, 20)
    ]
    write_events(redis_client, INVOICES, burst)
    redis_client.xtrim(INVOICES.keys.events, maxlen=30, approximate=False)
    write_events(
        redis_client, INVOICES, job_events("inv-2024-0500", (first + 2) * MINUTE_MS, 40, 900)
    )
    collect_until_read(collector)
    gaps = [redis_client.hget(history.minute(m), "g") for m in (first + 1, first + 2)]
    assert gaps == [b"1", None]
    collector.stop()


def test_a_lease_key_left_without_expiry_gets_the_lease_time_and_is_then_taken(
    redis_client: Redis, redis_url: str
) -> None:
    """A lease key with no expiry (set by hand, or by a holder that never
    set one) would keep every collector standing by for ever: the first to
    find it gives it exactly the lease time, then takes the lease once it
    is gone (its first term)."""
    collector = HistoryCollector(connect(redis_url), lambda: [INVOICES], lease_s=300.0)
    redis_client.set(COLLECTOR_LEASE, "web-0 of an older release")
    assert collector.step() is False
    assert 299_700 < redis_client.pttl(COLLECTOR_LEASE) <= 300_000  # 0.1% is 300 ms
    redis_client.delete(COLLECTOR_LEASE)
    collector.step()
    assert (collector.holding, collector.terms) == (True, 1)
    collector.stop()


def test_a_failing_pass_is_tried_again_every_second(
    redis_url: str, caplog: pytest.LogCaptureFixture
) -> None:
    """A Redis that refuses connections, and a queue list that raises: the
    collector tries again a second later, neither hammering the server or
    the log in a loop nor waiting longer."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        dead_port = probe.getsockname()[1]
    refused = HistoryCollector(Redis(port=dead_port), lambda: [INVOICES], name="web-3")
    asked: list[float] = []

    def failing_list() -> list[QueueRef]:
        asked.append(time.monotonic())
        raise ValueError("invalid queue name in discovery reply")

    failing = HistoryCollector(connect(redis_url), failing_list, name="web-4")
    with caplog.at_level(logging.WARNING, logger="queues.collector"):
        refused.start()
        failing.start()
        time.sleep(1.5)
        refused.stop()
        failing.stop()
    tries = [
        r for r in caplog.records if "web-3" in r.getMessage() and "trying again" in r.getMessage()
    ]
    assert (len(tries), len(asked)) == (2, 2)
