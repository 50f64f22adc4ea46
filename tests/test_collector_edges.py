"""The history collector at edges its other tests did not reach, found by
mutation testing (issue 26, docs/mutation.md): a wait in the last latency
bucket, how long each history key is kept, a full batch read again at once,
and a job's start remembered from one pass to the next. Real Redis; events
as BullMQ writes them (tests/history_helpers.py)."""

from __future__ import annotations

import os
import re
import socket
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

import pytest
from redis import Redis

from queues import collector as collector_module
from queues.collector import (
    HOUR_MS,
    MINUTE_MS,
    MINUTES_KEPT_MS,
    RECENT_SLOTS,
    SAME_ATTEMPT_MS,
    HistoryCollector,
)
from queues.connection import connect
from queues.keys import COLLECTOR_LEASE, COLLECTOR_STATUS, HistoryKeys
from queues.latency import LAST_BUCKET, bucket_of
from queues.queue import Queue
from queues.read.history import recent, totals
from queues.read.refs import QueueRef
from tests.history_helpers import Event, collect_until_read, event, job_events, write_events

REF = QueueRef("bull", "invoices")
HISTORY = HistoryKeys(REF.name, REF.prefix)
HOUR_START = int(time.time() * 1000) // HOUR_MS * HOUR_MS
DAY_MS = 24 * HOUR_MS


def _collector(url: str, **options: float) -> HistoryCollector:
    options.setdefault("record_every_s", 0.0)
    return HistoryCollector(connect(url), lambda: [REF], name="history-1", **options)  # type: ignore[arg-type]


def _one_pass_each(client: Redis, collector: HistoryCollector, passes: list[list[Event]]) -> None:
    """Each pass reads what was added since the last, and records nothing
    before RECORD_EVERY_S."""
    for events in passes:
        write_events(client, REF, events)
        assert collector.step() is False
        assert collector.read_last_pass == len(events)


def _recorded(client: Redis, collector: HistoryCollector) -> tuple[int, int]:
    """A pass that reads nothing records: then the jobs completed, and the
    recordHistory writes since the stats were reset."""
    collect_until_read(collector)
    completed = totals(client, [REF])[REF].figures.completed
    return completed, client.info("commandstats")["cmdstat_evalsha"]["calls"]


def test_a_job_that_waited_two_months_lands_in_the_last_bucket(
    redis_client: Redis, redis_url: str
) -> None:
    """A queue paused over a long holiday: its job was added 61 days before
    a worker took it (past 2^32 ms, the last bucket's lower edge). The
    collector did not see it become ready, so its wait comes from the hash."""
    at = HOUR_START + 3 * MINUTE_MS
    created = at - 61 * DAY_MS
    redis_client.hset(
        REF.keys.job("inv-2024-0117"),
        mapping={
            "name": "send-invoice",
            "data": '{"invoice":"INV-2024-0117","customer":"cus_NffrFeUfNVbHib"}',
            "timestamp": created,
            "delay": 0,
            "processedOn": at,
        },
    )
    event(redis_client, REF, at, "active", "inv-2024-0117", prev="waiting")
    collect_until_read(_collector(redis_url))
    wait = totals(redis_client, [REF])[REF].figures.wait
    assert bucket_of(61 * DAY_MS) == LAST_BUCKET
    assert (wait.buckets, wait.sum_ms) == ({LAST_BUCKET: 1}, 61 * DAY_MS)


def test_each_history_key_is_kept_as_long_as_the_docs_say(
    redis_client: Redis, redis_url: str
) -> None:
    """A minute is kept two days after it ends, an hour 30 days after it
    ends, and the overview's ring of recent minutes until its slots have all
    come round after the newest minute written (queues/collector.py). The
    minute is the current one: a ring whose expiry time has passed is
    deleted at once by its PEXPIREAT."""
    minute = int(time.time() * 1000) // MINUTE_MS
    write_events(redis_client, REF, job_events("inv-1", minute * MINUTE_MS + 500, 120, 800))
    collect_until_read(_collector(redis_url))
    hour = minute * MINUTE_MS // HOUR_MS
    assert redis_client.pexpiretime(HISTORY.minute(minute)) == (
        (minute + 1) * MINUTE_MS + MINUTES_KEPT_MS
    )
    assert redis_client.pexpiretime(HISTORY.hour(hour)) == (hour + 1) * HOUR_MS + 30 * DAY_MS
    assert redis_client.pexpiretime(HISTORY.recent) == (minute + 1 + RECENT_SLOTS) * MINUTE_MS


def test_a_full_batch_after_the_cursor_says_there_is_more_to_read_at_once(
    redis_client: Redis, redis_url: str
) -> None:
    """A busy stream: after the first read, 40 jobs' 120 events wait. A pass
    reads one whole batch of them (the cursor's own event read again besides,
    to prove nothing was trimmed) and says so, so the collector reads again
    without pausing; the next passes read the rest, each event once."""
    collector = _collector(redis_url, batch=50)
    start = HOUR_START + 21 * MINUTE_MS
    write_events(redis_client, REF, job_events("inv-0", start, 40, 300))
    collect_until_read(collector)
    events = []
    for n in range(1, 41):
        events += job_events(f"inv-{n}", start + 1000 + n * 20, 40, 300)
    write_events(redis_client, REF, events)
    assert collector.step() is True
    assert collector.read_last_pass == 50
    collect_until_read(collector)
    assert totals(redis_client, [REF])[REF].figures.completed == 41


def test_a_start_seen_in_one_pass_times_a_finish_read_in_the_next(
    redis_client: Redis, redis_url: str
) -> None:
    """A job that became active in one pass and completed in a later one,
    its hash removed on completion (removeOnComplete): its run time comes
    from the active event the collector remembers, the hash being gone."""
    collector = _collector(redis_url)
    at = HOUR_START + 31 * MINUTE_MS
    event(redis_client, REF, at, "waiting", "inv-77")
    event(redis_client, REF, at + 35, "active", "inv-77", prev="waiting")
    collect_until_read(collector)
    event(redis_client, REF, at + 35 + 1_850, "completed", "inv-77", prev="active")
    collect_until_read(collector)
    figures = totals(redis_client, [REF])[REF].figures
    assert (figures.completed, figures.wait.buckets) == (1, {bucket_of(35): 1})
    assert figures.run.buckets == {bucket_of(1_850): 1}


def test_a_delayed_job_waits_from_when_it_was_due_and_a_start_one_second_off_is_its_own(
    redis_client: Redis, redis_url: str
) -> None:
    """Waits the collector takes from a job's hash (it did not see the job
    become ready): a payment reminder delayed 15 minutes waited from when it
    was due, processedOn - timestamp - delay (1.2 s), not from when it was
    added. A receipt whose worker wrote processedOn exactly SAME_ATTEMPT_MS
    before its active event (a slow round trip) is still that attempt's."""
    at = HOUR_START + 41 * MINUTE_MS
    delay = 15 * MINUTE_MS
    hashes = {
        "inv-2024-0311": {"timestamp": at - delay - 1_200, "delay": delay, "processedOn": at},
        "inv-2024-0312": {"timestamp": at - 3_000, "delay": 0, "processedOn": at - SAME_ATTEMPT_MS},
    }
    for job_id, times in hashes.items():
        redis_client.hset(
            REF.keys.job(job_id),
            mapping={
                "name": "send-invoice",
                "data": '{"invoice":"' + job_id.upper() + '"}',
                **times,
            },
        )
        event(redis_client, REF, at, "active", job_id, prev="waiting")
    collect_until_read(_collector(redis_url))
    wait = totals(redis_client, [REF])[REF].figures.wait
    assert (wait.buckets, wait.sum_ms) == ({bucket_of(1_200): 1, bucket_of(2_000): 1}, 3_200)


def test_the_queue_list_and_the_backlogs_are_read_every_ten_seconds_not_every_pass(
    redis_client: Redis, redis_url: str
) -> None:
    """A pass runs every fraction of a second; the list of queues (a SCAN of
    the keyspace in the dashboard) and each queue's backlog (a count of
    every waiting state) are read only every QUEUES_EVERY_S and
    BACKLOG_EVERY_S: three passes in a row ask once."""
    asked: list[int] = []

    def list_queues() -> list[QueueRef]:
        asked.append(1)
        return [REF]

    collector = HistoryCollector(connect(redis_url), list_queues, record_every_s=0.0)
    event(redis_client, REF, HOUR_START + 43 * MINUTE_MS, "waiting", "inv-2024-0400")
    collector.step()
    redis_client.config_resetstat()
    collector.step()
    collector.step()
    stats = redis_client.info("commandstats")
    assert len(asked) == 1
    assert "cmdstat_llen" not in stats
    assert "cmdstat_zcard" not in stats


def test_the_lease_is_renewed_every_renew_every_s_not_every_pass(
    redis_client: Redis, redis_url: str
) -> None:
    """Renewing the lease is a round trip: a pass renews it only once
    renew_every_s has gone by since it was taken or last renewed."""
    collector = _collector(redis_url, lease_s=30.0, renew_every_s=20.0)
    collector.step()
    assert collector.holding
    time.sleep(0.3)
    collector.step()
    assert redis_client.pttl(COLLECTOR_LEASE) <= 29_750


def test_a_minute_of_events_is_recorded_in_one_write(redis_client: Redis, redis_url: str) -> None:
    """A minute's events fold into one batch, written by one recordHistory
    call however many milliseconds they span (at 10,000 jobs/s a write per
    millisecond would be thousands a pass); the backlog sample is the pass's
    other write."""
    start = HOUR_START + 47 * MINUTE_MS
    events = []
    for n in range(12):
        events += job_events(f"inv-2024-05{n:02d}", start + 900 * n, 35 + n, 410 + 7 * n)
    write_events(redis_client, REF, events)
    collector = _collector(redis_url)
    redis_client.config_resetstat()
    collect_until_read(collector)
    assert totals(redis_client, [REF])[REF].figures.completed == 12
    assert redis_client.info("commandstats")["cmdstat_evalsha"]["calls"] == 2


def test_passes_between_two_records_add_to_the_minutes_one_batch(
    redis_client: Redis, redis_url: str
) -> None:
    """A collector records every RECORD_EVERY_S, not every pass: the passes
    between two records fold into the minute's pending batch, which the
    record then writes once (a write per pass is what the interval saves),
    also when a pass begins at the very millisecond the minute begins."""
    collector = _collector(redis_url, record_every_s=3600.0)
    start = HOUR_START + 51 * MINUTE_MS
    write_events(redis_client, REF, job_events("inv-2024-0600", start - 9_000, 40, 700))
    collect_until_read(collector)  # the first pass records: nothing was pending
    redis_client.config_resetstat()
    passes = [
        [(start, "waiting", "inv-2024-0601", {})],
        [(start, "active", "inv-2024-0601", {"prev": "waiting"})],
        *(job_events(f"inv-2024-060{n}", start + 5_000 * n, 40, 700) for n in range(2, 5)),
    ]
    _one_pass_each(redis_client, collector, passes)
    assert "cmdstat_evalsha" not in redis_client.info("commandstats")
    assert _recorded(redis_client, collector) == (4, 1)


def test_a_job_taken_in_the_millisecond_it_became_ready_waited_0_ms_at_most(
    redis_client: Redis, redis_url: str
) -> None:
    """An idle worker blocked on the marker takes a job the moment it is
    added: ready and active share a millisecond, and the minute's longest
    wait is 0 ms, not a made-up 1."""
    at = HOUR_START + 53 * MINUTE_MS + 250
    write_events(redis_client, REF, job_events("inv-2024-0700", at, 0, 380))
    collect_until_read(_collector(redis_url))
    assert totals(redis_client, [REF])[REF].figures.wait.buckets == {bucket_of(0): 1}
    minute = redis_client.hgetall(HISTORY.minute(at // MINUTE_MS))
    assert (minute[b"wx"], minute[b"rx"]) == (b"0", b"380")


def test_a_queue_that_appears_later_is_collected_once_the_list_is_read_again(
    redis_client: Redis, redis_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A second queue starts being used: the next reading of the queue list
    names it, and that pass reads its stream too (the folders of the last
    pass are kept only while the list is the same)."""
    monkeypatch.setattr(collector_module, "QUEUES_EVERY_S", 0.0)  # re-read every pass
    receipts = QueueRef("bull", "receipts")
    known = [REF]
    collector = HistoryCollector(connect(redis_url), lambda: list(known), record_every_s=0.0)
    at = HOUR_START + 55 * MINUTE_MS
    write_events(redis_client, REF, job_events("inv-2024-0800", at, 20, 300))
    write_events(redis_client, receipts, job_events("rcp-2024-0800", at, 30, 500))
    collect_until_read(collector)
    known.append(receipts)
    collect_until_read(collector)
    both = totals(redis_client, [REF, receipts])
    assert (both[REF].figures.completed, both[receipts].figures.completed) == (1, 1)


def test_stop_returns_once_the_collector_has_handed_the_lease_back(redis_url: str) -> None:
    """A process shutting down calls stop(): when it returns, the thread has
    ended and the lease is free, so the next collector starts at once."""
    collector = _collector(redis_url, idle_s=0.05)
    thread = collector.start()
    deadline = time.monotonic() + 10
    while not collector.holding:
        assert time.monotonic() < deadline
        time.sleep(0.01)
    collector.stop()
    assert not thread.is_alive()
    assert not collector.holding
    assert collector.client.exists(COLLECTOR_LEASE) == 0


def test_an_idle_collector_passes_every_idle_s(redis_client: Redis, redis_url: str) -> None:
    """Holding the lease with nothing to read, the collector's thread asks
    for news once every idle_s (0.4 s: about five times in two seconds), not
    in a busy loop, nor at the standby's pace, nor at the busy pace."""
    collector = _collector(redis_url, idle_s=0.4, standby_poll_s=30.0)
    redis_client.config_resetstat()
    collector.start()
    time.sleep(2.0)
    collector.stop()
    news_reads = redis_client.info("commandstats")["cmdstat_xread"]["calls"]
    assert 2 <= news_reads <= 8


def test_a_process_that_exits_without_stopping_its_collector_is_not_held_open(
    redis_url: str,
) -> None:
    """The collector's thread is a daemon: a process that ends without
    calling stop() (a management command that returns, an interpreter
    exiting on an error) is not kept alive by it."""
    program = (
        "from queues.collector import HistoryCollector\n"
        "from queues.connection import connect\n"
        f"collector = HistoryCollector(connect({redis_url!r}), lambda: [], idle_s=0.05)\n"
        "collector.start()\n"
    )
    root = Path(__file__).resolve().parent.parent
    done = subprocess.run([sys.executable, "-c", program], cwd=root, timeout=20, check=False)
    assert done.returncode == 0


def test_a_job_key_that_is_no_hash_gives_no_duration_and_the_others_still_count(
    redis_client: Redis, redis_url: str
) -> None:
    """Three invoices became active in a pass that did not see them become
    ready: one's key was overwritten with a string by another writer, one's
    hash has no processedOn (a writer that does not set it). Their waits are
    unknown and left out; the third's, from its hash, is counted."""
    at = HOUR_START + 57 * MINUTE_MS
    redis_client.set(REF.keys.job("inv-2024-0901"), "INV-2024-0901 sent")
    redis_client.hset(
        REF.keys.job("inv-2024-0902"),
        mapping={"name": "send-invoice", "timestamp": at - 900, "delay": 0},
    )
    redis_client.hset(
        REF.keys.job("inv-2024-0900"),
        mapping={"name": "send-invoice", "timestamp": at - 640, "delay": 0, "processedOn": at},
    )
    for job_id in ("inv-2024-0901", "inv-2024-0902", "inv-2024-0900"):
        event(redis_client, REF, at, "active", job_id, prev="waiting")
    redis_client.config_resetstat()
    collect_until_read(_collector(redis_url))
    wait = totals(redis_client, [REF])[REF].figures.wait
    assert (wait.buckets, wait.sum_ms) == ({bucket_of(640): 1}, 640)
    # The lookups are reads that need no atomicity: no MULTI, which would
    # make the server run the whole batch of them as one block while every
    # other client waits.
    multi: dict[str, int] = redis_client.info("commandstats").get("cmdstat_multi", {})
    assert multi.get("calls", 0) == 0


def test_a_fold_goes_on_past_an_event_without_a_job_and_a_failure_that_never_ran(
    redis_client: Redis, redis_url: str
) -> None:
    """A minute's stream as BullMQ writes it: a drained event (no jobId) and
    an admin's fail of a waiting invoice (prev=waiting: it never ran, no
    run time) sit between job events; the events after them are folded in
    the same pass (a fold that stopped there left them to a pass each). The
    failed invoice had run once before (a timeout) and waited for its
    retry: its hash holds that attempt's processedOn beside the fail's
    finishedOn, which make no run time of this failure."""
    at = HOUR_START + 59 * MINUTE_MS
    redis_client.hset(
        REF.keys.job("inv-2024-1002"),
        mapping={
            "name": "send-invoice",
            "timestamp": at - 95_000,
            "delay": 0,
            "processedOn": at - 94_000,
            "finishedOn": at + 700,
            "atm": 1,
            "failedReason": "cancelled",
        },
    )
    events = [
        *job_events("inv-2024-1000", at, 15, 420),
        (at + 500, "drained", "", {}),
        (at + 600, "waiting", "inv-2024-1001", {}),
        (at + 620, "active", "inv-2024-1001", {"prev": "waiting"}),
        (at + 700, "failed", "inv-2024-1002", {"failedReason": "cancelled", "prev": "waiting"}),
        (at + 1_130, "completed", "inv-2024-1001", {"returnvalue": "null", "prev": "active"}),
        *job_events("inv-2024-1003", at + 2_000, 25, 380),
    ]
    for ms, name, job_id, fields in events:
        flat = {"event": name, **({"jobId": job_id} if job_id else {}), **fields}
        redis_client.xadd(REF.keys.events, flat, id=f"{ms}-*")  # type: ignore[arg-type]
    collector = _collector(redis_url)
    assert collector.step() is False
    assert collector.read_last_pass == len(events)
    figures = totals(redis_client, [REF])[REF].figures
    assert (figures.completed, figures.failed) == (3, 1)
    assert figures.run.buckets == Counter(bucket_of(ms) for ms in (420, 510, 380))
    assert figures.run.sum_ms == 420 + 510 + 380


def test_a_job_whose_id_is_a_field_name_of_its_events_is_read_by_field(
    redis_client: Redis, redis_url: str
) -> None:
    """Custom job ids are the producer's own strings: a job whose id is
    ``prev`` fails after running. Its failed event reads ``jobId prev ...
    prev active``; the id is a value, and only a field name says where the
    job came from, so the run counts."""
    at = HOUR_START + 43 * MINUTE_MS
    write_events(redis_client, REF, job_events("prev", at, 30, 640, ok=False))
    collect_until_read(_collector(redis_url))
    figures = totals(redis_client, [REF])[REF].figures
    assert (figures.failed, figures.run.buckets, figures.run.sum_ms) == (
        1,
        {bucket_of(640): 1},
        640,
    )


def test_passes_between_two_records_go_on_with_the_newest_pending_minute(
    redis_client: Redis, redis_url: str
) -> None:
    """A pass that folds the end of one minute and the start of the next
    leaves two batches pending; the next pass, before the record, adds to
    the newer one. The record writes one batch a minute: two writes."""
    collector = _collector(redis_url, record_every_s=3600.0)
    start = HOUR_START + 41 * MINUTE_MS
    write_events(redis_client, REF, job_events("inv-2024-1300", start - 20_000, 40, 700))
    collect_until_read(collector)  # the first pass records: nothing was pending
    redis_client.config_resetstat()
    passes = [
        job_events("inv-2024-1301", start - 2_000, 40, 700)
        + job_events("inv-2024-1302", start + 1_000, 35, 650),
        job_events("inv-2024-1303", start + 9_000, 45, 720),
    ]
    _one_pass_each(redis_client, collector, passes)
    assert _recorded(redis_client, collector) == (4, 2)


def test_a_producer_clock_a_millisecond_ahead_gives_a_wait_of_0_not_minus_1(
    redis_client: Redis, redis_url: str
) -> None:
    """A job's timestamp comes from the producer's clock and its processedOn
    from the worker's: with the web server's clock 1 ms ahead, the hash
    says the job started 1 ms before it was added. The wait is counted as
    0 ms (a clock step), not summed or kept as the minute's longest as -1."""
    at = HOUR_START + 45 * MINUTE_MS + 300
    redis_client.hset(
        REF.keys.job("inv-2024-1400"),
        mapping={"name": "send-invoice", "timestamp": at + 1, "delay": 0, "processedOn": at},
    )
    event(redis_client, REF, at, "active", "inv-2024-1400", prev="waiting")
    collect_until_read(_collector(redis_url))
    wait = totals(redis_client, [REF])[REF].figures.wait
    assert (wait.buckets, wait.sum_ms) == ({bucket_of(0): 1}, 0)
    assert redis_client.hget(HISTORY.minute(at // MINUTE_MS), "wx") == b"0"


def test_a_collector_remembers_at_most_tracked_jobs_ready_jobs(
    redis_client: Redis, redis_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """What a burst of added jobs makes the collector hold is bounded: past
    TRACKED_JOBS ready jobs (20,000; 3 here) the oldest are forgotten (a
    forgotten job's wait, once it starts, comes from its hash)."""
    monkeypatch.setattr(collector_module, "TRACKED_JOBS", 3)
    at = HOUR_START + 39 * MINUTE_MS
    ids = [f"inv-2024-15{n:02d}" for n in range(4)]
    write_events(redis_client, REF, [(at + 10 * n, "waiting", i, {}) for n, i in enumerate(ids)])
    collector = _collector(redis_url)
    collect_until_read(collector)
    assert list(collector.folders[REF].ready_at) == [i.encode() for i in ids[1:]]


def test_a_collector_is_named_after_its_host_and_process_and_six_hex_digits(
    redis_client: Redis, redis_url: str
) -> None:
    """The status names the collecting process as docs/history.md says,
    host:pid:id, the id six hex digits that tell two collectors of one
    process apart."""
    collector = HistoryCollector(connect(redis_url), lambda: [REF], record_every_s=0.0)
    other = HistoryCollector(connect(redis_url), lambda: [REF])
    host, pid, tail = collector.name.rsplit(":", 2)
    assert (host, pid) == (socket.gethostname(), str(os.getpid()))
    assert re.fullmatch("[0-9a-f]{6}", tail)
    assert other.name != collector.name
    collect_until_read(collector)
    assert redis_client.hget(COLLECTOR_STATUS, "holder") == collector.name.encode()


def test_a_backlog_state_of_the_wrong_type_counts_as_empty(
    redis_client: Redis, redis_url: str
) -> None:
    """A queue whose prioritized key another writer overwrote with a string:
    the backlog is sampled from its other states, and the pass goes on."""
    queue = Queue(REF.name, redis_client, prefix=REF.prefix)
    queue.add_bulk([("send-invoice", {"invoice": f"INV-2024-11{n:02d}"}, None) for n in range(4)])
    redis_client.set(REF.keys.prioritized, "left by a migration script")
    collect_until_read(_collector(redis_url))
    now = int(time.time() * 1000)
    assert recent(redis_client, [REF], now_ms=now)[REF].backlog == 4


def test_a_collector_that_lost_its_lease_stands_by(redis_client: Redis, redis_url: str) -> None:
    """The lease lapsed (a long pause of the process) and another collector
    took it: the next renewal fails, and this one stands by instead of
    collecting beside the new holder."""
    first = _collector(redis_url, renew_every_s=0.0)
    first.step()
    assert first.holding
    redis_client.delete(COLLECTOR_LEASE)
    second = _collector(redis_url)
    second.step()
    assert second.holding
    first.step()
    assert not first.holding
