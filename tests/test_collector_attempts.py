"""The history collector at two edges the first tests did not reach (issue
26): a stream trimmed exactly up to the cursor's event (no gap: that event
is still there), and a job hash that holds a later attempt than the event
being folded (its times are not that attempt's: no duration from them).
Real Redis; events as BullMQ writes them (tests/history_helpers.py)."""

from __future__ import annotations

import time

from redis import Redis

from queues.collector import HOUR_MS, MINUTE_MS, SAME_ATTEMPT_MS, HistoryCollector
from queues.connection import connect
from queues.latency import bucket_of
from queues.read.history import totals
from queues.read.refs import QueueRef
from tests.history_helpers import collect_until_read, event, job_events, write_events

REF = QueueRef("bull", "thumbnails")
HOUR_START = int(time.time() * 1000) // HOUR_MS * HOUR_MS


def _collector(url: str) -> HistoryCollector:
    return HistoryCollector(connect(url), lambda: [REF], name="history-1", record_every_s=0.0)


def test_a_stream_trimmed_up_to_the_cursors_own_event_is_no_gap(
    redis_client: Redis, redis_url: str
) -> None:
    """A busy queue's stream is capped: right after a read it may be trimmed
    so that the cursor's event is the oldest one left. Nothing after it was
    lost, so no gap is said, and what came after is counted once."""
    collector = _collector(redis_url)
    start = HOUR_START + 7 * MINUTE_MS
    write_events(
        redis_client, REF, job_events("th-1", start, 4, 120) + job_events("th-2", start + 10, 3, 95)
    )
    collect_until_read(collector)
    cursor = totals(redis_client, [REF])[REF].cursor
    redis_client.xtrim(REF.keys.events, minid=cursor, approximate=False)
    (oldest,) = redis_client.xrange(REF.keys.events, count=1)
    assert oldest[0].decode() == cursor
    write_events(redis_client, REF, job_events("th-3", start + 200, 2, 140))
    collect_until_read(collector)
    figures = totals(redis_client, [REF])[REF].figures
    assert (figures.completed, figures.gaps) == (3, 0)


def _finished_event_only(
    client: Redis, at_ms: int, job_id: str, *, ok: bool, processed: int, finished: int
) -> None:
    """A job's finish event, read by a collector that did not see it start
    (it took over since), and its hash as the job's latest attempt left it."""
    client.hset(
        REF.keys.job(job_id),
        mapping={
            "name": "resize",
            "data": '{"upload":"img_8c1f.jpg","width":320}',
            "timestamp": at_ms - 60_000,
            "delay": 0,
            "processedOn": processed,
            "finishedOn": finished,
        },
    )
    if ok:
        event(client, REF, at_ms, "completed", job_id, returnvalue="null", prev="active")
    else:
        event(client, REF, at_ms, "failed", job_id, failedReason="worker lost", prev="active")


def test_a_run_time_is_taken_only_from_the_attempt_the_event_reports(
    redis_client: Redis, redis_url: str
) -> None:
    """The first attempt of th-9 failed at t; it was retried and its second
    attempt ran 30 s later, so its hash holds that attempt's processedOn and
    finishedOn when the collector folds the first failure. That failure gets
    no run time (the hash's would be the second attempt's); th-10's hash is
    its own finish's, and gives its run time; one exactly SAME_ATTEMPT_MS
    away still counts as the same attempt."""
    at = HOUR_START + 9 * MINUTE_MS
    _finished_event_only(
        redis_client, at, "th-9", ok=False, processed=at + 30_000, finished=at + 30_450
    )
    _finished_event_only(
        redis_client, at + 5, "th-10", ok=True, processed=at - 700, finished=at + 5
    )
    _finished_event_only(
        redis_client,
        at + 9,
        "th-11",
        ok=True,
        processed=at - 2_000,
        finished=at + 9 + SAME_ATTEMPT_MS,
    )
    collect_until_read(_collector(redis_url))
    figures = totals(redis_client, [REF])[REF].figures
    assert (figures.completed, figures.failed) == (2, 1)
    assert figures.run.buckets == {bucket_of(705): 1, bucket_of(3_009): 1}


def test_a_wait_is_taken_only_from_the_attempt_the_event_reports(
    redis_client: Redis, redis_url: str
) -> None:
    """A job the collector sees start but not become ready waits
    processedOn - timestamp, when processedOn is this attempt's: a job
    retried since holds a later processedOn, and gets no wait."""
    at = HOUR_START + 11 * MINUTE_MS
    for job_id, processed in (("th-20", at), ("th-21", at + 45_000)):
        redis_client.hset(
            REF.keys.job(job_id),
            mapping={"name": "resize", "timestamp": at - 250, "delay": 0, "processedOn": processed},
        )
        event(redis_client, REF, at, "active", job_id, prev="waiting")
    collect_until_read(_collector(redis_url))
    assert totals(redis_client, [REF])[REF].figures.wait.buckets == {bucket_of(250): 1}
