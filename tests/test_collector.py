"""The metrics history collector against a real Redis: exact figures from known
events, one collector at a time, takeover without gap or double count,
hours equal to their minutes, restarts resuming from the stored cursor."""

from __future__ import annotations

import asyncio
import dataclasses
import gc
import logging
import time
from collections import Counter
from typing import Any

import pytest
from redis import Redis
from redis.exceptions import RedisError

from queues import codec, collector_report
from queues.collector import (
    HOUR_MS,
    MINUTE_MS,
    RECENT_SLOTS,
    HistoryCollector,
    LeaseLost,
    MinuteBatch,
    QueueFolder,
    record,
)
from queues.connection import connect
from queues.errors import CorruptKey
from queues.job import Job
from queues.keys import COLLECTOR_LEASE, COLLECTOR_STATUS, HistoryKeys, stopped_history_field
from queues.latency import bucket_of, percentile_ms, upper_bound_ms
from queues.queue import Queue
from queues.read.counts import METRICS_POINTS, QueueSummary, queue_summaries
from queues.read.history import (
    Figures,
    collector_status,
    history,
    recent,
    recent_minutes,
    totals,
    with_history_series,
    with_recent_series,
)
from queues.read.refs import QueueRef
from tests.history_helpers import (
    a_minute_ago_ms,
    collect_until_read,
    idle_collector,
    job_events,
    write_events,
)
from tests.worker_helpers import running, until

REF = QueueRef("bull", "hist")
# The start of this hour: a workload may straddle two hours on purpose, and
# hashes of a time more than two days (minutes) or 30 days (hours) ago expire
# at once.
HOUR_START = int(time.time() * 1000) // HOUR_MS * HOUR_MS


def collector(url: str, name: str, **options: float) -> HistoryCollector:
    """A collector of REF that records after every pass (tests step passes by
    hand and look at once) unless ``record_every_s`` says otherwise."""
    options.setdefault("record_every_s", 0.0)
    return HistoryCollector(connect(url), lambda: [REF], name=name, **options)  # type: ignore[arg-type]


def test_a_bucket_holds_its_duration_and_percentiles_land_within_nine_percent() -> None:
    for ms in (0, 1, 2, 3, 50, 999, 1000, 123_456, 2**40):
        bucket = bucket_of(ms)
        assert ms <= upper_bound_ms(bucket)
        assert bucket == 0 or ms > upper_bound_ms(bucket - 1)
    counts = Counter(bucket_of(ms) for ms in range(1, 1001))
    p50 = percentile_ms(counts, 0.5)
    assert p50 is not None
    assert 500 / 1.1 <= p50 <= 500 * 1.1
    assert percentile_ms({}, 0.5) is None
    assert percentile_ms(counts, 1.0, maximum=1000) == 1000


def test_known_events_give_exact_counts_durations_and_minutes(
    redis_client: Redis, redis_url: str
) -> None:
    start = HOUR_START + 5 * MINUTE_MS
    events = []
    for n in range(30):
        events += job_events(f"a{n}", start + n * 100, 200, 50)
    for n in range(10):
        events += job_events(f"b{n}", start + MINUTE_MS + n * 100, 1000, 400, ok=False)
    write_events(redis_client, REF, events)
    c = collector(redis_url, "one")
    collect_until_read(c)

    points = {
        p.start_ms: p.figures
        for p in history(redis_client, REF, "1h", now_ms=start + 30 * MINUTE_MS).points
    }
    first, second = points[start], points[start + MINUTE_MS]
    assert (first.completed, first.failed) == (30, 0)
    assert (second.completed, second.failed) == (0, 10)
    assert first.run.buckets == {bucket_of(50): 30}
    assert first.run.max_ms == 50
    assert first.wait.buckets == {bucket_of(200): 30}
    assert first.wait.sum_ms == 30 * 200
    assert second.run.max_ms == 400
    assert second.wait.max_ms == 1000
    p50 = second.run.percentile(0.5)
    assert p50 is not None
    assert 400 / 1.1 <= p50 <= 400
    assert sum(f.completed + f.failed for f in points.values()) == 40
    assert totals(redis_client, [REF])[REF].figures.completed == 30


def test_an_hour_is_exactly_the_sum_of_its_minutes(redis_client: Redis, redis_url: str) -> None:
    # Jobs across three minutes, the last ones in the next hour.
    events = []
    for n in range(90):
        ready = HOUR_START - 2 * MINUTE_MS + n * 1500
        events += job_events(f"j{n}", ready, 7 * n, 3 * n + 1, ok=n % 4 != 0)
    write_events(redis_client, REF, events)
    collect_until_read(collector(redis_url, "one"))
    keys = HistoryKeys(REF.name, REF.prefix)
    for hour in (HOUR_START // HOUR_MS - 1, HOUR_START // HOUR_MS):
        summed = Figures()
        for minute in range(hour * 60, hour * 60 + 60):
            summed.merge(Figures.from_hash(redis_client.hgetall(keys.minute(minute))))
        held = Figures.from_hash(redis_client.hgetall(keys.hour(hour)))
        assert held.completed + held.failed > 0
        assert (held.completed, held.failed) == (summed.completed, summed.failed)
        assert held.wait == summed.wait
        assert held.run == summed.run
    minute_ttl = redis_client.pttl(keys.minute(HOUR_START // MINUTE_MS))
    assert minute_ttl > 0  # the history is kept bounded: every hash expires
    assert redis_client.pttl(keys.hour(HOUR_START // HOUR_MS)) > minute_ttl


def test_only_the_lease_holder_collects_and_a_stale_holder_cannot_count_twice(
    redis_client: Redis, redis_url: str
) -> None:
    first, second = collector(redis_url, "first"), collector(redis_url, "second")
    write_events(redis_client, REF, job_events("1", HOUR_START, 10, 10))
    first.step()
    second.step()
    assert first.holding
    assert not second.holding
    assert totals(redis_client, [REF])[REF].figures.completed == 1

    # The first holder stalls past its lease (a long GC pause, a frozen VM):
    # the second takes over and records the next job.
    redis_client.delete(COLLECTOR_LEASE)
    write_events(redis_client, REF, job_events("2", HOUR_START + 100, 10, 10))
    collect_until_read(second)
    assert second.holding
    # The first wakes up, still believing it holds the lease, and reads job 2 too:
    # its write is refused, and it stands by.
    with pytest.raises(LeaseLost):
        first.collect_pass()
    assert not first.step()
    assert not first.holding
    assert totals(redis_client, [REF])[REF].figures.completed == 2


def test_a_restarted_collector_resumes_after_the_last_event_recorded(
    redis_client: Redis, redis_url: str
) -> None:
    before = collector(redis_url, "before")
    write_events(
        redis_client, REF, [e for n in range(50) for e in job_events(f"x{n}", HOUR_START + n, 5, 5)]
    )
    collect_until_read(before)
    before.stop()
    before.run()  # returns at once (stopped), handing the lease back
    assert redis_client.exists(COLLECTOR_LEASE) == 0
    later = [e for n in range(50, 80) for e in job_events(f"x{n}", HOUR_START + 10_000 + n, 5, 5)]
    write_events(redis_client, REF, later)
    after = collector(redis_url, "after")
    collect_until_read(after)
    assert totals(redis_client, [REF])[REF].figures.completed == 80
    cursor = totals(redis_client, [REF])[REF].cursor
    newest = redis_client.xrevrange(REF.keys.events, count=1)[0][0].decode()
    assert cursor == newest


def test_backlog_is_sampled_from_the_ready_states(redis_client: Redis, redis_url: str) -> None:
    queue = Queue(REF.name, redis_client)
    queue.add_bulk([("n", None, None) for _ in range(7)] + [("p", None, {"priority": 3})] * 2)
    queue.add("d", None, {"delay": 60_000})
    c = collector(redis_url, "one")
    collect_until_read(c)
    now = int(time.time() * 1000)
    last = history(redis_client, REF, "1h", now_ms=now).points[-1].figures
    assert last.backlog == 9
    assert last.backlog_max == 9
    assert recent(redis_client, [REF], now_ms=now)[REF].backlog == 9


def test_a_collector_that_dies_is_replaced_by_the_other_with_nothing_lost_or_counted_twice(
    redis_client: Redis, redis_url: str
) -> None:
    """Two collectors in two threads with their own clients; the holder dies
    without handing the lease back (its thread stops, the lease lapses): the
    other takes over within the lease time and the totals equal the workload."""
    first = collector(redis_url, "first", lease_s=3.0, renew_every_s=1.0, standby_poll_s=0.5)
    second = collector(redis_url, "second", lease_s=3.0, renew_every_s=1.0, standby_poll_s=0.5)
    first.start()
    deadline = time.monotonic() + 10
    while not first.holding:
        assert time.monotonic() < deadline
        time.sleep(0.05)
    second.start()
    written = 0
    base = int(time.time() * 1000)
    for n in range(100):
        write_events(redis_client, REF, job_events(f"k{n}", base + 10 * n, 3, 4))
        written += 1
    time.sleep(1.0)
    assert first.holding
    assert not second.holding
    # Die: the thread ends without releasing the lease, as a killed process would.
    first.holding = False
    first.stop()
    died = time.monotonic()
    for n in range(100, 200):
        write_events(redis_client, REF, job_events(f"k{n}", base + 10 * n, 3, 4))
        written += 1
    while not second.holding:
        assert time.monotonic() - died < 30, "no takeover within 30 s"
        time.sleep(0.05)
    took = time.monotonic() - died
    deadline = time.monotonic() + 10
    while totals(redis_client, [REF])[REF].figures.completed < written:
        assert time.monotonic() < deadline
        time.sleep(0.05)
    second.stop()
    assert took < 5  # lease 3 s + poll 0.5 s
    figures = totals(redis_client, [REF])[REF].figures
    assert figures.completed == written
    assert figures.run.count == written
    assert collector_status(redis_client).holder == "second"


async def test_figures_of_a_real_workload_run_by_our_worker(
    redis_client: Redis, redis_url: str
) -> None:
    """1,000 jobs of 50 ms each → run p50 about 50 ms; 40 jobs held back 1.5 s
    before any worker starts → their waits are at least 1.5 s."""
    queue = Queue(REF.name, redis_client)
    queue.add_bulk([("held", None, None) for _ in range(40)])
    await asyncio.sleep(1.5)

    async def fifty_ms(job: Job) -> None:
        await asyncio.sleep(0.05)

    async with running(REF.name, fifty_ms, url=redis_url, concurrency=50):
        await until(lambda: redis_client.zcard(REF.keys.completed) == 40, timeout=30)
        queue.add_bulk([("n", None, None) for _ in range(1000)])
        await until(lambda: redis_client.zcard(REF.keys.completed) == 1040, timeout=60)
    c = collector(redis_url, "one")
    await asyncio.to_thread(collect_until_read, c)
    now = int(time.time() * 1000)
    summed = Figures()
    for point in history(redis_client, REF, "1h", now_ms=now).points:
        summed.merge(point.figures)
    assert summed.completed == 1040
    assert summed.failed == 0
    assert summed.run.count == 1040
    assert summed.wait.count == 1040
    # The truth to compare with: each job's own finishedOn - processedOn. On
    # a quiet machine it is about 50 ms; under load the worker's event loop
    # stretches it, and the collector must report what really happened. The
    # hash's times are the worker's clock when it sent each script, the
    # events' Redis's when it ran them: under load they differ by a few ms
    # a job, hence 25% and not the buckets' 9%.
    pipe = redis_client.pipeline(transaction=False)
    for job_id in redis_client.zrange(REF.keys.completed, 0, -1):
        pipe.hmget(REF.keys.job(job_id.decode()), ["processedOn", "finishedOn"])
    runs = sorted(int(done) - int(began) for began, done in pipe.execute())
    true_p50 = runs[len(runs) // 2]
    assert true_p50 >= 50
    p50 = summed.run.percentile(0.5)
    assert p50 is not None
    assert true_p50 / 1.25 <= p50 <= true_p50 * 1.25, (p50, true_p50)
    assert summed.run.max_ms is not None
    assert summed.run.max_ms >= 50
    held_waits = sum(
        count for bucket, count in summed.wait.buckets.items() if upper_bound_ms(bucket) >= 1500
    )
    assert held_waits >= 40
    assert summed.wait.max_ms is not None
    assert summed.wait.max_ms >= 1500


def test_after_a_takeover_durations_come_from_the_job_hash(
    redis_client: Redis, redis_url: str
) -> None:
    """The first collector saw the job become ready and start, the next one
    only its end: the run time is the hash's finishedOn - processedOn. A job
    the next one sees start without having seen it ready waits processedOn -
    timestamp; a job whose hash is gone is counted with no duration."""
    start = HOUR_START + 20 * MINUTE_MS
    gone = job_events("gone", start + 200, 10, 1790)
    write_events(redis_client, REF, job_events("h1", start, 100, 777)[:2] + gone[:2])
    first = collector(redis_url, "first")
    collect_until_read(first)
    first.stop()
    first.run()  # hands the lease back
    redis_client.hset(
        REF.keys.job("h1"),
        mapping={"timestamp": start - 5, "processedOn": start + 100, "finishedOn": start + 877},
    )
    redis_client.hset(
        REF.keys.job("h2"),
        mapping={
            "timestamp": start + 1000,
            "processedOn": start + 1450,
            "finishedOn": start + 1500,
        },
    )
    write_events(
        redis_client,
        REF,
        [
            *job_events("h1", start, 100, 777)[2:],
            *job_events("h2", start + 1000, 450, 50)[1:],  # its waiting event unseen
            gone[2],  # no hash: no run time
        ],
    )
    collect_until_read(collector(redis_url, "second"))
    figures = totals(redis_client, [REF])[REF].figures
    assert figures.completed == 3
    assert figures.run.buckets == {bucket_of(777): 1, bucket_of(50): 1}
    assert figures.run.sum_ms == 777 + 50
    assert figures.wait.buckets == {bucket_of(100): 1, bucket_of(10): 1, bucket_of(450): 1}


def test_many_queues_are_read_a_few_at_a_time_and_all_counted(
    redis_client: Redis, redis_url: str
) -> None:
    refs = [QueueRef("bull", f"many-{n}") for n in range(23)]  # more than QUEUES_PER_READ
    for n, ref in enumerate(refs):
        write_events(redis_client, ref, job_events("1", HOUR_START + n, 1, 1))
    c = HistoryCollector(connect(redis_url), lambda: refs, name="many")
    collect_until_read(c)
    assert all(t.figures.completed == 1 for t in totals(redis_client, refs).values())


def test_an_unexpected_error_does_not_end_the_collector(
    redis_client: Redis, redis_url: str
) -> None:
    calls: list[int] = []

    def queues_failing_once() -> list[QueueRef]:
        calls.append(1)
        if len(calls) == 1:
            raise ValueError("a bad setting")
        return [REF]

    write_events(redis_client, REF, job_events("1", HOUR_START, 1, 1))
    c = HistoryCollector(connect(redis_url), queues_failing_once, name="sturdy")
    c.start()
    try:
        deadline = time.monotonic() + 10
        while totals(redis_client, [REF])[REF].figures.completed != 1:
            assert time.monotonic() < deadline, "the collector gave up"
            time.sleep(0.05)
    finally:
        c.stop()
    assert len(calls) >= 2


def test_events_trimmed_before_they_were_read_are_reported_as_a_gap(
    redis_client: Redis, redis_url: str
) -> None:
    c = collector(redis_url, "one")
    write_events(redis_client, REF, job_events("1", HOUR_START, 1, 1))
    write_events(redis_client, REF, job_events("2", HOUR_START + 10, 1, 1))
    collect_until_read(c)
    # More events than a stream keeps arrive while no collector reads...
    later = [e for n in range(40) for e in job_events(f"x{n}", HOUR_START + 100 + n, 1, 1)]
    write_events(redis_client, REF, later)
    redis_client.xtrim(REF.keys.events, maxlen=30, approximate=False)
    kept = [f[b"event"] for _, f in redis_client.xrange(REF.keys.events)].count(b"completed")
    collect_until_read(c)
    figures = totals(redis_client, [REF])[REF].figures
    assert figures.gaps == 1
    assert figures.completed == 2 + kept < 42
    # Events that arrive within what the stream keeps are no gap.
    write_events(redis_client, REF, job_events("y", HOUR_START + 500, 1, 1))
    collect_until_read(c)
    assert totals(redis_client, [REF])[REF].figures.gaps == 1


def test_a_gap_is_said_even_when_the_stream_is_trimmed_again_before_it_is_checked(
    redis_client: Redis, redis_url: str
) -> None:
    """A stream written at 10,000 jobs/s is trimmed between any two commands:
    the gap check must not depend on what the stream holds after the read."""
    c = collector(redis_url, "one")
    write_events(redis_client, REF, job_events("1", HOUR_START, 1, 1))
    collect_until_read(c)
    later = [e for n in range(40) for e in job_events(f"x{n}", HOUR_START + 100 + n, 1, 1)]
    write_events(redis_client, REF, later)
    redis_client.xtrim(REF.keys.events, maxlen=30, approximate=False)
    read_and_fold = c._read_and_fold
    more = [e for n in range(5) for e in job_events(f"y{n}", HOUR_START + 500 + n, 1, 1)]

    def a_writer_trims_right_after_the_read(group: list[QueueFolder]) -> list[Any]:
        folded = read_and_fold(group)
        write_events(redis_client, REF, more)
        redis_client.xtrim(REF.keys.events, maxlen=30, approximate=False)
        return folded

    c._read_and_fold = a_writer_trims_right_after_the_read  # type: ignore[method-assign]
    c.collect_pass()
    assert totals(redis_client, [REF])[REF].figures.gaps == 1


def _stream_commands(client: Redis) -> dict[str, int]:
    """XREAD and XRANGE calls since the last CONFIG RESETSTAT."""
    stats = client.info("commandstats")
    return {name: stats.get(f"cmdstat_{name}", {}).get("calls", 0) for name in ("xread", "xrange")}


def test_idle_queues_cost_one_xread_a_pass_and_only_streams_with_news_are_read(
    redis_client: Redis, redis_url: str
) -> None:
    """A thousand idle queues once cost a thousand XRANGEs every 0.2 s in a
    server process (its pages' floor rose from 2.0 to 3.4 ms)."""
    refs = [QueueRef("bull", f"idle-{n}") for n in range(50)]
    base = a_minute_ago_ms()
    c = idle_collector(redis_client, redis_url, refs, base)

    redis_client.config_resetstat()
    assert c.collect_pass() is False
    assert _stream_commands(redis_client) == {"xread": 1, "xrange": 0}
    write_events(redis_client, refs[7], job_events("late", base + 100, 5, 5))
    redis_client.config_resetstat()
    c.collect_pass()
    # One XRANGE for the stream with news; it starts at the cursor, whose
    # event still there says nothing was trimmed (no gap check of its own).
    assert _stream_commands(redis_client) == {"xread": 1, "xrange": 1}
    assert recent(redis_client, [refs[7]], minutes=5)[refs[7]].completed == 2
    assert totals(redis_client, [refs[7]])[refs[7]].figures.gaps == 0


def test_a_stream_read_last_pass_is_read_again_without_asking_for_news(
    redis_client: Redis, redis_url: str
) -> None:
    """At 10,000 jobs/s the question "any news?" was one round trip in five of
    a pass, and a busy stream always has news."""
    refs = [QueueRef("bull", "busy"), QueueRef("bull", "quiet")]
    base = a_minute_ago_ms()
    for n, ref in enumerate(refs):
        write_events(redis_client, ref, job_events(f"j{n}", base + n, 5, 5))
    c = HistoryCollector(connect(redis_url), lambda: refs, name="busy", record_every_s=0.0)
    collect_until_read(c)
    c.collect_pass()
    c.collect_pass()  # both quiet now
    write_events(redis_client, refs[0], job_events("k1", base + 100, 5, 5))
    c.collect_pass()  # asked, then read
    write_events(redis_client, refs[0], job_events("k2", base + 200, 5, 5))
    redis_client.config_resetstat()
    c.collect_pass()
    # The busy stream read straight away; only the quiet one asked about.
    assert _stream_commands(redis_client) == {"xread": 1, "xrange": 1}
    assert totals(redis_client, [refs[0]])[refs[0]].figures.completed == 3
    redis_client.config_resetstat()
    c.collect_pass()  # the busy stream, read once more, had nothing: quiet again
    c.collect_pass()
    assert _stream_commands(redis_client) == {"xread": 2, "xrange": 1}


def test_a_deleted_cursor_event_is_no_gap_and_a_trimmed_one_is(
    redis_client: Redis, redis_url: str
) -> None:
    """The read starts at the cursor's own event; when it is gone the gap is
    decided as before: only when the first event after it is the oldest left."""
    c = collector(redis_url, "one")
    write_events(redis_client, REF, job_events("1", HOUR_START, 1, 1))
    write_events(redis_client, REF, job_events("2", HOUR_START + 10, 1, 1))
    collect_until_read(c)
    cursor = totals(redis_client, [REF])[REF].cursor
    # An admin deletes the cursor's event (XDEL): older events are still there.
    redis_client.xdel(REF.keys.events, cursor)
    write_events(redis_client, REF, job_events("3", HOUR_START + 20, 1, 1))
    collect_until_read(c)
    figures = totals(redis_client, [REF])[REF].figures
    assert (figures.completed, figures.gaps) == (3, 0)
    # Trimmed up to and past the cursor while events kept coming: a gap.
    write_events(redis_client, REF, job_events("4", HOUR_START + 30, 1, 1))
    redis_client.xtrim(REF.keys.events, maxlen=2, approximate=False)
    collect_until_read(c)
    figures = totals(redis_client, [REF])[REF].figures
    assert (figures.completed, figures.gaps) == (4, 1)


def test_a_key_that_is_no_stream_does_not_keep_the_others_from_being_read(
    redis_client: Redis, redis_url: str
) -> None:
    refs = [QueueRef("bull", "fine"), QueueRef("bull", "garbage")]
    redis_client.set(refs[1].keys.events, "not a stream")
    write_events(redis_client, refs[0], job_events("a", int(time.time() * 1000) - 1000, 5, 5))
    c = HistoryCollector(connect(redis_url), lambda: refs, name="mixed")
    collect_until_read(c)
    assert recent(redis_client, [refs[0]], minutes=5)[refs[0]].completed == 1


def _many_jobs(client: Redis, ref: QueueRef, jobs: int, start_ms: int) -> None:
    """The events of ``jobs`` jobs from ``start_ms`` on, written in one
    pipeline (fast enough for thousands)."""
    pipe = client.pipeline(transaction=False)
    for n in range(jobs):
        for ms, name, job_id, fields in job_events(f"g{start_ms}-{n}", start_ms + 3 * n, 1, 1):
            flat = {"event": name, "jobId": job_id, **fields}
            pipe.xadd(ref.keys.events, flat, id=f"{ms}-*")  # type: ignore[arg-type]
    pipe.execute()


def test_reading_a_big_batch_sets_off_no_cyclic_collection(
    redis_client: Redis, redis_url: str
) -> None:
    """An XRANGE reply is two lists per event: 1,500 jobs' events (9,000
    lists) would set off a dozen collections, and promote the lists they find
    to the oldest generation, whose full collections then cost the whole
    process; read and folded with the cyclic GC paused, none runs."""
    _many_jobs(redis_client, REF, 1500, HOUR_START)
    c = collector(redis_url, "one")
    collect_until_read(c)  # the lease; the collector's own first calls
    _many_jobs(redis_client, REF, 1500, HOUR_START + 10_000)
    collections: list[int] = []

    def count(phase: str, info: dict[str, int]) -> None:
        if phase == "start":
            collections.append(info["generation"])

    gc.collect()
    gc.callbacks.append(count)
    try:
        c.collect_pass()
    finally:
        gc.callbacks.remove(count)
    assert totals(redis_client, [REF])[REF].figures.completed == 3000
    assert len(collections) <= 1, collections
    assert gc.isenabled()


def test_a_host_that_switched_the_cyclic_gc_off_keeps_it_off(
    redis_client: Redis, redis_url: str
) -> None:
    write_events(redis_client, REF, job_events("1", HOUR_START, 1, 1))
    c = collector(redis_url, "one")
    gc.disable()
    try:
        collect_until_read(c)
        assert not gc.isenabled()
    finally:
        gc.enable()
    assert totals(redis_client, [REF])[REF].figures.completed == 1


def test_what_a_pass_folds_is_recorded_once_a_second_or_when_a_pass_reads_nothing(
    redis_client: Redis, redis_url: str
) -> None:
    """At 10,000 jobs/s a pass every 0.05 s recorded each time (a script call
    and its JSON: a third of a pass's fixed cost); the status goes with it."""
    c = collector(redis_url, "one", record_every_s=1.0)
    write_events(redis_client, REF, job_events("1", HOUR_START, 1, 1))
    c.step()  # a new term records at once, and says who collects
    assert totals(redis_client, [REF])[REF].figures.completed == 1
    said = collector_status(redis_client).caught_up_ms
    assert said is not None
    write_events(redis_client, REF, job_events("2", HOUR_START + 10, 1, 1))
    time.sleep(0.01)
    c.collect_pass()
    assert totals(redis_client, [REF])[REF].figures.completed == 1  # folded, pending
    assert collector_status(redis_client).caught_up_ms == said
    c.collect_pass()  # nothing more to read: recorded, and caught up
    assert totals(redis_client, [REF])[REF].figures.completed == 2
    caught_up = collector_status(redis_client).caught_up_ms
    assert caught_up is not None
    assert caught_up > said
    write_events(redis_client, REF, job_events("3", HOUR_START + 20, 1, 1))
    c.collect_pass()
    write_events(redis_client, REF, job_events("4", HOUR_START + 30, 1, 1))
    time.sleep(1.0)
    c.collect_pass()  # a second since the last record: recorded though it read
    figures = totals(redis_client, [REF])[REF].figures
    assert figures.completed == 4
    assert figures.run.count == 4
    later = collector_status(redis_client).caught_up_ms
    assert later is not None
    assert later >= caught_up + 1000


def _one_recorded_then_more_folded(
    client: Redis, url: str, name: str, jobs: int
) -> HistoryCollector:
    """A collector that recorded one job, then folded ``jobs`` more without
    recording them (it records once a minute)."""
    c = collector(url, name, record_every_s=60.0)
    write_events(client, REF, job_events("1", HOUR_START, 1, 1))
    c.step()
    for n in range(2, 2 + jobs):
        write_events(client, REF, job_events(f"{n}", HOUR_START + 10 * n, 1, 1))
        c.collect_pass()
    assert totals(client, [REF])[REF].figures.completed == 1
    return c


def test_what_a_dead_collector_folded_unrecorded_is_counted_once_by_the_next(
    redis_client: Redis, redis_url: str
) -> None:
    first = _one_recorded_then_more_folded(redis_client, redis_url, "first", 3)
    # It dies (no hand back) and its lease lapses: the next reads from the
    # recorded cursor.
    redis_client.delete(COLLECTOR_LEASE)
    second = collector(redis_url, "second", record_every_s=60.0)
    collect_until_read(second)
    figures = totals(redis_client, [REF])[REF].figures
    assert (figures.completed, figures.run.count, figures.gaps) == (4, 4, 0)
    # The dead one wakes up and tries to record what it folded: refused.
    with pytest.raises(LeaseLost):
        first.collect_pass()
    assert totals(redis_client, [REF])[REF].figures.completed == 4


def test_a_collector_that_stops_records_what_it_folded_before_handing_back(
    redis_client: Redis, redis_url: str
) -> None:
    c = _one_recorded_then_more_folded(redis_client, redis_url, "one", 1)
    c.stop()  # not started: run() below is its thread's body, stopped at once
    c.run()
    assert totals(redis_client, [REF])[REF].figures.completed == 2
    assert redis_client.exists(COLLECTOR_LEASE) == 0


def test_after_a_redis_error_mid_pass_what_was_folded_is_read_again(
    redis_client: Redis, redis_url: str
) -> None:
    """A pass that folded events, then failed on Redis before it looked for a
    gap, must not go on from what it folded: the next pass reads again from
    the recorded cursor, and says the gap."""
    c = collector(redis_url, "one", record_every_s=60.0)
    write_events(redis_client, REF, job_events("1", HOUR_START, 1, 1))
    collect_until_read(c)
    later = [e for n in range(40) for e in job_events(f"x{n}", HOUR_START + 100 + n, 1, 1)]
    write_events(redis_client, REF, later)
    redis_client.xtrim(REF.keys.events, maxlen=30, approximate=False)
    kept = [f[b"event"] for _, f in redis_client.xrange(REF.keys.events)].count(b"completed")
    complete = c._complete
    failures = [RedisError("the connection dropped")]

    def fails_once(folded: Any) -> None:
        if failures:
            raise failures.pop()
        complete(folded)

    c._complete = fails_once  # type: ignore[method-assign]
    c.start()
    try:
        deadline = time.monotonic() + 10
        while totals(redis_client, [REF])[REF].figures.completed < 1 + kept:
            assert time.monotonic() < deadline, "the collector did not go on"
            time.sleep(0.05)
    finally:
        c.stop()
    figures = totals(redis_client, [REF])[REF].figures
    assert (figures.completed, figures.gaps) == (1 + kept, 1)


def _overview_row(client: Redis, now: int) -> QueueSummary:
    """REF as the overview reads it, its workers keeping no metrics."""
    (summary,) = queue_summaries(client, [REF], now_ms=now)
    (summary,) = with_recent_series(client, [summary], METRICS_POINTS)
    return summary


def test_the_overview_s_recent_minutes_say_what_the_minute_hashes_say(
    redis_client: Redis, redis_url: str
) -> None:
    """The overview draws a queue without worker metrics from the packed
    recent minutes, its page from the minute hashes: the same figures."""
    now = int(time.time() * 1000)
    first = (now // MINUTE_MS - 12) * MINUTE_MS
    events = []
    for n in range(60):  # a job every 12 s over 12 minutes, one in five failing
        events += job_events(f"j{n}", first + n * 12_000, 30, 80, ok=n % 5 != 0)
    write_events(redis_client, REF, events)
    collect_until_read(collector(redis_url, "one"))
    overview = _overview_row(redis_client, now)
    assert overview.counted_from_events
    # It starts at the first minute the collector covered, not 30 idle ones before.
    assert len(overview.completed_per_minute) == 12
    # Every job finished before this minute began (the last one 11.8 min in).
    assert (sum(overview.completed_per_minute), sum(overview.failed_per_minute)) == (48, 12)
    (page,) = with_history_series(redis_client, [overview_without_series(overview)], 30)
    assert page.completed_per_minute[-12:] == overview.completed_per_minute
    assert page.failed_per_minute[-12:] == overview.failed_per_minute
    assert not any(page.completed_per_minute[:-12] + page.failed_per_minute[:-12])
    assert page.this_minute == overview.this_minute


def overview_without_series(summary: QueueSummary) -> QueueSummary:
    return dataclasses.replace(
        summary, completed_per_minute=[], failed_per_minute=[], counted_from_events=False
    )


def test_recent_minutes_keep_the_newest_minute_of_each_slot(redis_client: Redis) -> None:
    keys = HistoryKeys(REF.name, REF.prefix)
    minute = int(time.time() * 1000) // MINUTE_MS

    def batch(at: int, completed: int, failed: int) -> MinuteBatch:
        added = MinuteBatch(at, "")
        added.add.update({"c": completed, "f": failed})
        return added

    def written(at: int, completed: int, failed: int) -> None:
        cursor = codec.text(redis_client.hget(keys.state, "cursor")) or ""
        one = batch(at, completed, failed)
        one.last_id = f"{at}-0"
        record(redis_client, REF, cursor, one)

    written(minute, 3, 1)
    written(minute, 2, 0)  # the same minute: added
    written(minute + RECENT_SLOTS, 7, 7)  # its slot's next turn: replaces it
    written(minute, 100, 100)  # an older minute in a newer slot: left alone
    held = recent_minutes(redis_client.get(keys.recent), minute, minute + RECENT_SLOTS)
    assert held == {minute + RECENT_SLOTS: (7, 7)}
    written(minute + 1, 0, 0)  # a backlog sample: the minute is covered, with nothing
    held = recent_minutes(redis_client.get(keys.recent), minute, minute + RECENT_SLOTS)
    assert held == {minute + 1: (0, 0), minute + RECENT_SLOTS: (7, 7)}
    # Expires once its newest minute has left every window: bounded, like the hashes.
    assert 0 < redis_client.pttl(keys.recent) <= (RECENT_SLOTS + 2) * MINUTE_MS


def test_a_recent_minutes_key_of_another_type_refuses_the_batch_and_writes_nothing(
    redis_client: Redis,
) -> None:
    keys = HistoryKeys(REF.name, REF.prefix)
    redis_client.hset(keys.recent, "someone", "else's")
    minute = int(time.time() * 1000) // MINUTE_MS
    one = MinuteBatch(minute, "1-0")
    one.add["c"] = 1
    with pytest.raises(
        CorruptKey, match=f"{keys.recent} holds a hash, where the queue keeps a string"
    ):
        record(redis_client, REF, "", one)
    assert not redis_client.exists(keys.state, keys.minute(minute), keys.hour(minute // 60))
    assert redis_client.hgetall(keys.recent) == {b"someone": b"else's"}


def test_recent_minutes_of_another_type_read_as_none(redis_client: Redis) -> None:
    redis_client.hset(HistoryKeys(REF.name, REF.prefix).recent, "someone", "else's")
    assert _overview_row(redis_client, int(time.time() * 1000)).completed_per_minute == []


# -- one queue's broken history key costs that queue's history only (issue 22) ------

SOUND, BROKEN = QueueRef("bull", "sound"), QueueRef("bull", "cq1")


def _two_queues(client: Redis) -> None:
    now = int(time.time() * 1000) - 1000
    for ref in (SOUND, BROKEN):
        write_events(client, ref, job_events("1", now, 5, 5))


def test_a_state_key_of_the_wrong_type_stops_that_queue_only_and_is_logged_once(
    redis_client: Redis, redis_url: str, caplog: pytest.LogCaptureFixture
) -> None:
    """The probe's ``SET 'echomq:history:{bull:cq1}:state' x``: the running
    collector (its thread, as a server starts it) kept the sound queue's
    history, said why the other one stopped, and warned once, not a second."""
    _two_queues(redis_client)
    state = HistoryKeys(BROKEN.name, BROKEN.prefix).state
    redis_client.set(state, "x")
    c = HistoryCollector(connect(redis_url), lambda: [SOUND, BROKEN], name="sturdy")
    c.start()
    try:
        deadline = time.monotonic() + 10
        while totals(redis_client, [SOUND])[SOUND].figures.completed != 1:
            assert time.monotonic() < deadline, "the sound queue's history stopped too"
            time.sleep(0.05)
        time.sleep(2.5)  # passes go on: two and a half seconds of them
    finally:
        c.stop()
    assert redis_client.get(state) == b"x"
    why = f"its key {state} holds a string"
    assert redis_client.hget(COLLECTOR_STATUS, stopped_history_field(BROKEN.qualified)) == (
        why.encode()
    )
    # The collector's own records: a discovery thread of an earlier test in
    # this process may still be warning about that test's Redis, now gone.
    warnings = [
        r.getMessage()
        for r in caplog.records
        if r.levelno >= logging.WARNING and r.name.startswith("queues.collector")
    ]
    assert warnings == [
        f"history of bull:cq1 stopped: {why} (the other queues' history goes on; this one's"
        " resumes once that key is repaired or deleted)"
    ]


def test_a_broken_minute_key_stops_its_queue_until_deleted_then_it_resumes(
    redis_client: Redis,
    redis_url: str,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    """A string where a minute's hash belongs, three minutes ago: the queue is
    tried again and again (its backlog sample, in the current minute, goes
    through each time) and stays stopped, said once, until the key is gone."""
    monkeypatch.setattr(collector_report, "RETRY_S", 0.05)
    then = int(time.time() * 1000) - 3 * MINUTE_MS
    for ref in (SOUND, BROKEN):
        write_events(redis_client, ref, job_events("1", then, 5, 5))
    minute = HistoryKeys(BROKEN.name, BROKEN.prefix).minute(then // MINUTE_MS)
    redis_client.set(minute, "x")
    c = collector(redis_url, "one")
    c.list_queues = lambda: [SOUND, BROKEN]
    for _ in range(4):
        collect_until_read(c)
        time.sleep(0.06)
    assert totals(redis_client, [SOUND, BROKEN])[SOUND].figures.completed == 1
    assert totals(redis_client, [BROKEN])[BROKEN].figures.completed == 0
    assert redis_client.hget(COLLECTOR_STATUS, stopped_history_field(BROKEN.qualified)) == (
        f"its key {minute} holds a string".encode()
    )
    said = [r.getMessage() for r in caplog.records if "bull:cq1" in r.getMessage()]
    assert len(said) == 1

    redis_client.delete(minute)
    collect_until_read(c)
    assert totals(redis_client, [BROKEN])[BROKEN].figures.completed == 1
    assert redis_client.hgetall(minute)[b"c"] == b"1"
    assert not redis_client.hexists(COLLECTOR_STATUS, stopped_history_field(BROKEN.qualified))


def test_a_total_that_is_no_integer_refuses_the_record_before_any_write(
    redis_client: Redis, redis_url: str
) -> None:
    """HINCRBY failed on the state's garbage after the minute and the hour had
    been added to: each retry would have counted them again."""
    _two_queues(redis_client)
    keys = HistoryKeys(BROKEN.name, BROKEN.prefix)
    redis_client.hset(keys.state, "c", "many")
    c = collector(redis_url, "one")
    c.list_queues = lambda: [SOUND, BROKEN]
    collect_until_read(c)
    minute_ms = int(time.time() * 1000 - 1000)
    for key in (keys.minute(minute_ms // MINUTE_MS), keys.hour(minute_ms // HOUR_MS)):
        assert redis_client.hget(key, "c") is None  # the backlog samples went in
    assert redis_client.hget(keys.state, "c") == b"many"
    assert totals(redis_client, [SOUND])[SOUND].figures.completed == 1
    assert redis_client.hget(COLLECTOR_STATUS, stopped_history_field(BROKEN.qualified)) == (
        f"its key {keys.state} holds a hash whose field c is no integer".encode()
    )


def test_a_lease_nobody_holds_lapses_and_a_collector_takes_over(
    redis_client: Redis, redis_url: str
) -> None:
    """A lease key left without an expiry (a hand SET, a restore) is held by
    nobody and was never taken again: no history for any queue, for good."""
    redis_client.set(COLLECTOR_LEASE, "someone")
    write_events(redis_client, REF, job_events("1", int(time.time() * 1000) - 1000, 5, 5))
    c = collector(redis_url, "one", lease_s=0.5)
    assert not c.step()
    assert 0 < redis_client.pttl(COLLECTOR_LEASE) <= 500
    time.sleep(0.6)
    collect_until_read(c)
    assert totals(redis_client, [REF])[REF].figures.completed == 1


def test_a_status_key_of_the_wrong_type_costs_only_the_status(
    redis_client: Redis, redis_url: str, caplog: pytest.LogCaptureFixture
) -> None:
    redis_client.set(COLLECTOR_STATUS, "x")
    write_events(redis_client, REF, job_events("1", int(time.time() * 1000) - 1000, 5, 5))
    c = collector(redis_url, "one")
    for _ in range(3):
        collect_until_read(c)
    assert totals(redis_client, [REF])[REF].figures.completed == 1
    said = [r.getMessage() for r in caplog.records if COLLECTOR_STATUS in r.getMessage()]
    assert len(said) == 1
