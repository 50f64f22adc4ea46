"""The read model (queues/read/) against a real Redis: counts, pages of a
state, one job, events, progress and failed attempts; on a cluster too."""

from __future__ import annotations

import json
from typing import Any

import pytest
from msgspec import to_builtins
from redis import Redis

from queues import discovery, throughput
from queues.commands import reads
from queues.keys import InvalidName
from queues.read import counts
from queues.read.events import events_page, job_events
from queues.read.job import DATA_DISPLAY_LIMIT, job_detail
from queues.read.lists import job_page
from queues.read.progress import read_progress
from queues.read.refs import QueueRef
from queues.throughput import Windows
from tests.dashboard_seed import now_ms, seed_events, seed_failed_bulk, seed_job, seed_jobs
from tests.round_trips import counted_sends

REF = QueueRef("bull", "emails")
KEYS = REF.keys


def test_summaries_of_many_queues_take_one_round_trip(
    redis_client: Redis, monkeypatch: pytest.MonkeyPatch
) -> None:
    seed_jobs(redis_client, KEYS, "wait", 3)
    seed_job(redis_client, KEYS, "p1", state="paused")
    seed_job(redis_client, KEYS, "d1", state="delayed")
    seed_job(redis_client, KEYS, "f1", state="failed")
    seed_job(redis_client, KEYS, "c1", state="completed")
    seed_job(redis_client, KEYS, "a1", state="active")
    seed_job(redis_client, KEYS, "r1", state="prioritized")
    seed_job(redis_client, KEYS, "w1", state="waiting-children")
    redis_client.hset(KEYS.meta, "paused", 1)
    redis_client.lpush(KEYS.metrics_data("completed"), 5, 7)  # newest first: 7 then 5
    refs = [REF, QueueRef("bull", "other")]
    counts.queue_summaries(redis_client, refs)  # loads the script once
    with counted_sends(monkeypatch) as sent:
        emails, empty = counts.queue_summaries(redis_client, refs)
    assert len(sent) == 1
    assert emails.counts == {
        "wait": 4,
        "prioritized": 1,
        "delayed": 1,
        "active": 1,
        "waiting-children": 1,
        "completed": 1,
        "failed": 1,
    }
    assert emails.paused is True
    assert emails.completed_per_minute == [5, 7]
    assert empty.total == 0
    assert empty.paused is False
    redis_client.lpush(KEYS.metrics_data("failed"), 5, "garbage")  # newest first
    (with_garbage,) = counts.queue_summaries(redis_client, [REF])
    assert with_garbage.failed_per_minute == [5, 0]


def test_cluster_pipeline_reads_what_the_script_reads(redis_client: Redis) -> None:
    seed_jobs(redis_client, KEYS, "failed", 2)
    seed_job(redis_client, KEYS, "p", state="paused")
    redis_client.hset(KEYS.meta, "paused", 1)
    redis_client.lpush(KEYS.metrics_data("failed"), 3, 4)
    redis_client.set(KEYS.active, "wrong type")
    redis_client.hset(KEYS.metrics("failed"), mapping={"count": 9, "prevTS": 1, "prevCount": 7})
    # A queue without metrics whose completed set was trimmed inside the window.
    trimmed = QueueRef("bull", "trimmed").keys
    windows = Windows(now_ms())
    start = windows.recent_start
    for n, score in enumerate([start - 1000, start + 30_000, start + 60_000]):
        seed_job(redis_client, trimmed, f"f{n}", state="failed", score=score)
    for n in range(3):
        seed_job(redis_client, trimmed, f"c{n}", state="completed", score=start + 45_000 + n)
    refs = [REF, QueueRef("bull", "other"), QueueRef("bull", "trimmed")]
    by_script = counts._summary_replies(redis_client, refs, 5, windows)
    by_pipeline = counts._pipelined_summary_replies(redis_client, refs, 5, windows)
    per_queue = reads.COUNT_REPLIES + throughput.REPLIES
    assert len(by_script) == len(by_pipeline) == 3 * per_queue
    assert by_script[:9] == [0, 1, 0, 0, 0, 0, 0, 2, 1]
    for n in range(len(refs)):
        script = by_script[n * per_queue : (n + 1) * per_queue]
        pipeline = by_pipeline[n * per_queue : (n + 1) * per_queue]
        assert [v or 0 for v in pipeline[:9]] == script[:9]
        decoded = [throughput.decode(r[9:], windows, 5) for r in (script, pipeline)]
        assert decoded[0] == decoded[1]
    recent = throughput.decode(by_script[-throughput.REPLIES :], windows, 5).recent
    assert recent is not None
    # Counted from the oldest completed job kept: 3 completed, 1 failed since.
    assert (recent.completed, recent.failed) == (3, 1)


def test_failed_page_is_newest_first_with_total_and_reason_line(redis_client: Redis) -> None:
    for n in range(1, 8):
        seed_job(
            redis_client,
            KEYS,
            str(n),
            state="failed",
            score=1000 + n,
            fields={"failedReason": f"Error {n}\nsecond line"},
        )
    page = job_page(redis_client, REF, "failed", start=2, size=3)
    assert page.total == 7
    assert [row.job.id for row in page.rows] == ["5", "4", "3"]
    assert page.rows[0].reason_line == "Error 5"
    assert (page.start, page.end, page.has_next, page.has_previous) == (2, 5, True, True)
    assert to_builtins(page.as_json())["jobs"][0]["failed_reason"] == "Error 5"


def test_last_page_with_an_unreadable_member_offers_no_next_page(redis_client: Redis) -> None:
    seed_jobs(redis_client, KEYS, "failed", 2)
    redis_client.zadd(KEYS.failed, {"not:a-job-id": 1})  # ':' cannot be in a job id
    page = job_page(redis_client, REF, "failed", start=0, size=50)
    assert (page.total, len(page.rows)) == (3, 2)
    assert not page.has_next


def test_wait_page_spans_wait_then_paused_lists(redis_client: Redis) -> None:
    seed_jobs(redis_client, KEYS, "wait", 2)  # wait = [2, 1]
    seed_job(redis_client, KEYS, "p1", state="paused")
    page = job_page(redis_client, REF, "wait", start=1, size=5)
    assert page.total == 3
    assert [row.job.id for row in page.rows] == ["1", "p1"]


def test_rows_never_fetch_data_and_survive_a_missing_hash(redis_client: Redis) -> None:
    seed_job(redis_client, KEYS, "big", state="failed", data={"x": "y" * 100_000})
    redis_client.zadd(KEYS.failed, {"ghost": 1})
    page = job_page(redis_client, REF, "failed")
    rows = {row.job.id: row for row in page.rows}
    assert rows["big"].job.data_text is None
    assert rows["ghost"].missing is True


def test_delayed_rows_carry_due_time_from_the_score(redis_client: Redis) -> None:
    seed_job(redis_client, KEYS, "d", state="delayed", score=1_700_000_000_000 * 4096 + 3)
    (row,) = job_page(redis_client, REF, "delayed").rows
    assert row.due_ms == 1_700_000_000_000


def test_unknown_state_is_refused(redis_client: Redis) -> None:
    with pytest.raises(InvalidName):
        job_page(redis_client, REF, "nonsense")


def test_job_detail_reads_state_lock_logs_and_truncates_big_data(redis_client: Redis) -> None:
    seed_job(redis_client, KEYS, "7", state="active", data={"blob": "z" * 70_000})
    redis_client.set(KEYS.lock("7"), "token-1", px=30_000)
    redis_client.rpush(KEYS.logs("7"), *[f"line {n}" for n in range(120)])
    detail = job_detail(redis_client, REF, "7", logs_start=100, logs_size=50)
    assert detail is not None
    assert detail.state == "active"
    assert detail.lock_token == "token-1"
    assert detail.lock_ttl_ms is not None
    assert 0 < detail.lock_ttl_ms <= 30_000
    assert detail.logs_total == 120
    assert detail.logs == [f"line {n}" for n in range(100, 120)]
    assert detail.data_truncated is True
    assert len(detail.data_display) == DATA_DISPLAY_LIMIT
    full = job_detail(redis_client, REF, "7", full_data=True)
    assert full is not None
    assert not full.data_truncated
    assert json.loads(full.data_display) == {"blob": "z" * 70_000}


@pytest.mark.parametrize("state", ["wait", "paused", "delayed", "completed", "failed"])
def test_job_detail_finds_the_state(redis_client: Redis, state: str) -> None:
    seed_job(redis_client, KEYS, "j", state=state)
    detail = job_detail(redis_client, REF, "j")
    assert detail is not None
    assert detail.state == ("wait" if state == "paused" else state)


def test_job_detail_of_a_missing_job_is_none_and_parent_children_resolve(
    redis_client: Redis,
) -> None:
    assert job_detail(redis_client, REF, "nope") is None
    seed_job(
        redis_client,
        KEYS,
        "child",
        fields={"parentKey": "bull:parents:9", "parent": '{"id":"9","queueKey":"bull:parents"}'},
    )
    seed_job(redis_client, KEYS, "parent", state="waiting-children")
    redis_client.sadd(KEYS.dependencies("parent"), KEYS.job("child"))
    redis_client.hset(KEYS.processed("parent"), KEYS.job("done"), '"ok"')
    child = job_detail(redis_client, REF, "child")
    parent = job_detail(redis_client, REF, "parent")
    assert child is not None
    assert parent is not None
    assert child.parent_ref == (QueueRef("bull", "parents"), "9")
    assert parent.children_pending == ["child"]
    assert parent.children_processed == {"done": '"ok"'}
    assert parent.as_json([]).children.pending_total == 1


def test_events_page_newest_first_paginates_and_filters(redis_client: Redis) -> None:
    ids = seed_events(
        redis_client,
        KEYS,
        [("added", {"jobId": str(n % 3), "name": "x"}) for n in range(10)]
        + [("failed", {"jobId": "1", "failedReason": "boom"})],
    )
    first = events_page(redis_client, REF, size=4)
    assert [e.stream_id for e in first.events] == ids[::-1][:4]
    assert first.newest_id == ids[-1]
    second = events_page(redis_client, REF, size=4, before=first.next_before)
    assert [e.stream_id for e in second.events] == ids[::-1][4:8]
    only_failed = events_page(redis_client, REF, event_type="failed")
    assert [e.event for e in only_failed.events] == ["failed"]
    assert only_failed.next_before is None
    job1 = job_events(redis_client, REF, "1")
    assert [e.job_id for e in job1] == ["1"] * 4  # n = 1, 4, 7 and the failure
    with pytest.raises(InvalidName):
        events_page(redis_client, REF, before="not-an-id")


def test_page_cost_does_not_depend_on_queue_size(redis_client: Redis) -> None:
    seed_failed_bulk(redis_client, KEYS, 30_000)
    page = job_page(redis_client, REF, "failed", start=0, size=50)
    assert page.total == 30_000
    assert [row.job.id for row in page.rows[:2]] == ["30000", "29999"]
    assert job_detail(redis_client, REF, "1") is not None


@pytest.mark.cluster
@pytest.mark.parametrize("prefix", ["{bull}", "bull"])
def test_the_read_model_on_a_redis_cluster(cluster: Redis, prefix: str) -> None:
    """Hash-tagged queues keep each read on one node; untagged ones spread
    their keys over nodes, which the pipelines (never the script) handle."""
    refs = [QueueRef(prefix, "orders"), QueueRef(prefix, "mails")]
    keys = refs[0].keys
    for n in range(1, 4):
        seed_job(cluster, keys, str(n), state="failed", score=n)
    seed_job(cluster, keys, "w", state="wait")
    cluster.rpush(keys.logs("3"), "log line")
    seed_events(cluster, keys, [("failed", {"jobId": "3", "failedReason": "x"})])
    cluster.set(refs[1].keys.id, 1)
    found = discovery.discover_queues(cluster, [prefix])
    assert sorted(r.name for r in found) == ["mails", "orders"]
    orders, mails = counts.queue_summaries(cluster, refs)
    assert (orders.counts["failed"], orders.counts["wait"], mails.total) == (3, 1, 0)
    page = job_page(cluster, refs[0], "failed", size=2)
    assert [row.job.id for row in page.rows] == ["3", "2"]
    detail = job_detail(cluster, refs[0], "3")
    assert detail is not None
    assert (detail.state, detail.logs) == ("failed", ["log line"])
    assert [e.job_id for e in job_events(cluster, refs[0], "3")] == ["3"]


@pytest.mark.parametrize(
    ("value", "percent", "done", "total"),
    [
        (42, 42, None, None),
        (42.9, 42, None, None),
        (250, 100, None, None),
        (-3, 0, None, None),
        ({"step": 1, "of": 5}, 20, 1, 5),
        ({"current": 3, "total": 8, "label": "upload"}, 37, 3, 8),
        ({"done": 2, "total": 4}, 50, 2, 4),
        ({"value": 30, "max": 120}, 25, 30, 120),
        ({"processed": 7, "total": 7}, 100, 7, 7),
        ({"completed": 9, "of": 3}, 100, 9, 3),  # more done than planned: a full bar
        ({"step": 1.5, "of": 3}, 50, 1.5, 3),
    ],
)
def test_progress_of_a_known_shape_is_a_bar(
    value: Any, percent: int, done: float | None, total: float | None
) -> None:
    progress = read_progress(value)
    assert (progress.percent, progress.done, progress.total) == (percent, done, total)
    assert to_builtins(progress.as_json()) == {"percent": percent, "done": done, "total": total}


@pytest.mark.parametrize(
    "value",
    [
        None,
        "uploading",
        True,
        float("nan"),
        float("inf"),
        [1, 5],
        {"step": "upload", "of": 3},
        {"step": 1, "of": 0},
        {"step": -1, "of": 5},
        {"step": 1, "of": float("nan")},
        {"step": 1},
        {"percent": 40},
    ],
)
def test_progress_of_another_shape_has_no_bar(value: Any) -> None:
    progress = read_progress(value)
    assert progress.percent is None
    assert progress.as_json() is None


def test_nan_or_infinite_progress_in_the_hash_lists_and_shows_without_error(
    redis_client: Redis,
) -> None:
    seed_job(redis_client, KEYS, "nan", fields={"progress": "NaN"})
    seed_job(redis_client, KEYS, "inf", fields={"progress": "-Infinity"})
    page = job_page(redis_client, REF, "wait")
    assert [row.progress.percent for row in page.rows] == [None, None]
    detail = job_detail(redis_client, REF, "nan")
    assert detail is not None
    assert detail.progress.percent is None


def _attempts(redis: Redis, job_id: str) -> list[tuple[int | None, str]]:
    detail = job_detail(redis, REF, job_id)
    assert detail is not None
    return [(a.number, a.reason) for a in detail.failed_attempts]


def test_failed_attempts_are_numbered_back_from_the_latest_attempt(redis_client: Redis) -> None:
    js = "Error: card declined\n    at charge (billing.js:12:5)"
    py = 'Traceback (most recent call last):\n  File "w.py", line 3\nTimeoutError: gateway slow'
    traces = json.dumps([py, js])
    # Failed for good on attempt 2: the reason field is the latest one.
    seed_job(
        redis_client,
        KEYS,
        "f",
        state="failed",
        fields={"atm": 2, "ats": 2, "stacktrace": traces, "failedReason": "card declined"},
    )
    assert _attempts(redis_client, "f") == [(2, "card declined"), (1, "TimeoutError: gateway slow")]
    # Retried by an admin (reason cleared), then completed on attempt 3.
    seed_job(
        redis_client,
        KEYS,
        "c",
        state="completed",
        fields={"atm": 3, "ats": 3, "stacktrace": traces},
    )
    assert _attempts(redis_client, "c") == [
        (2, "Error: card declined"),
        (1, "TimeoutError: gateway slow"),
    ]
    # BullMQ's own retry keeps failedReason after the job completes: still history.
    seed_job(
        redis_client,
        KEYS,
        "b",
        state="completed",
        fields={"atm": 2, "ats": 2, "stacktrace": json.dumps([js]), "failedReason": "declined"},
    )
    assert _attempts(redis_client, "b") == [(1, "declined")]
    # Running its second attempt after one failure.
    seed_job(
        redis_client,
        KEYS,
        "a",
        state="active",
        fields={"atm": 1, "ats": 2, "stacktrace": json.dumps([js])},
    )
    assert _attempts(redis_client, "a") == [(1, "Error: card declined")]
    # Waiting for its retry.
    seed_job(
        redis_client,
        KEYS,
        "d",
        state="delayed",
        fields={"atm": 1, "ats": 1, "stacktrace": json.dumps([js]), "failedReason": "x"},
    )
    assert _attempts(redis_client, "d") == [(1, "x")]


def test_failed_attempts_without_counters_or_traces(redis_client: Redis) -> None:
    # Failed by an admin before it ever ran: no attempt number to give.
    seed_job(
        redis_client,
        KEYS,
        "admin",
        state="failed",
        fields={
            "atm": 0,
            "ats": 0,
            "stacktrace": json.dumps(["stuck (failed by ann)"]),
            "failedReason": "stuck (failed by ann)",
        },
    )
    assert _attempts(redis_client, "admin") == [(None, "stuck (failed by ann)")]
    # stackTraceLimit 0: only the reason is kept.
    seed_job(
        redis_client,
        KEYS,
        "bare",
        state="failed",
        fields={"atm": 1, "stacktrace": "[]", "failedReason": "boom\nmore"},
    )
    detail = job_detail(redis_client, REF, "bare")
    assert detail is not None
    assert [to_builtins(a.as_json()) for a in detail.failed_attempts] == [
        {"attempt": 1, "reason": "boom", "trace": ""}
    ]
    seed_job(redis_client, KEYS, "never", state="completed")
    assert _attempts(redis_client, "never") == []


def test_job_json_carries_the_progress_bar_and_the_failed_attempts(redis_client: Redis) -> None:
    seed_job(
        redis_client,
        KEYS,
        "j",
        state="failed",
        fields={
            "progress": '{"step": 2, "of": 8}',
            "atm": 1,
            "stacktrace": json.dumps(["Error: nope\n  at x"]),
        },
    )
    detail = job_detail(redis_client, REF, "j")
    assert detail is not None
    body = to_builtins(detail.as_json([]))
    assert body["progress_bar"] == {"percent": 25, "done": 2, "total": 8}
    assert body["failed_attempts"] == [
        {"attempt": 1, "reason": "boom", "trace": "Error: nope\n  at x"}
    ]
    row = to_builtins(job_page(redis_client, REF, "failed").rows[0].as_json())
    assert row["progress_bar"] == {"percent": 25, "done": 2, "total": 8}


@pytest.mark.parametrize("state", ["failed", "wait"])
def test_an_exactly_full_last_page_offers_no_empty_older_page(
    redis_client: Redis, state: str
) -> None:
    seed_jobs(redis_client, KEYS, state, 6)
    first = job_page(redis_client, REF, state, start=0, size=3)
    last = job_page(redis_client, REF, state, start=3, size=3)
    assert (len(first.rows), first.has_next) == (3, True)
    assert (len(last.rows), last.end, last.total, last.has_next) == (3, 6, 6, False)
    whole = job_page(redis_client, REF, state, start=0, size=6)
    assert (len(whole.rows), whole.has_next) == (6, False)


@pytest.mark.parametrize(
    ("start", "expected"),
    [
        (0, ["3", "2", "1", "p4", "p3"]),  # all of wait, then the newest paused
        (2, ["1", "p4", "p3", "p2", "p1"]),  # straddles the two lists
        (3, ["p4", "p3", "p2", "p1"]),  # paused only: the last, short page
        (5, ["p2", "p1"]),
    ],
)
def test_the_wait_page_spanning_wait_and_paused_holds_exactly_its_size(
    redis_client: Redis, start: int, expected: list[str]
) -> None:
    seed_jobs(redis_client, KEYS, "wait", 3)  # wait = [3, 2, 1], newest first
    for n in range(1, 5):
        seed_job(redis_client, KEYS, f"p{n}", state="paused")  # paused = [p4 .. p1]
    page = job_page(redis_client, REF, "wait", start=start, size=5)
    assert [row.job.id for row in page.rows] == expected
    assert page.total == 7
    assert page.has_next == (start + 5 < 7)


def seed_last_finished(client: Redis, prefix: str = "bull") -> list[QueueRef]:
    """Four queues: both sets kept, completed jobs not kept, nothing kept (two
    jobs waiting, the older one next in line), and another writer's garbage
    (a completed key of another type, an inf score, a wait list's tail with
    no job hash)."""
    both, failures, nothing, garbage = (
        QueueRef(prefix, name) for name in ("both", "failures", "nothing", "garbage")
    )
    seed_job(client, both.keys, "c1", state="completed", score=1_764_000_000_000)
    seed_job(client, both.keys, "c2", state="completed", score=1_764_000_060_000)
    seed_job(client, both.keys, "f1", state="failed", score=1_764_000_030_000)
    seed_job(client, failures.keys, "f1", state="failed", score=1_764_000_090_000)
    seed_job(client, nothing.keys, "w1", state="wait", fields={"timestamp": 1_764_000_100_000})
    seed_job(client, nothing.keys, "w2", state="wait", fields={"timestamp": 1_764_000_200_000})
    client.set(garbage.keys.completed, "not a set")
    client.zadd(garbage.keys.failed, {"odd": float("inf")})
    client.rpush(garbage.keys.wait, "gone")
    return [both, failures, nothing, garbage]


def assert_last_finished(client: Redis, refs: list[QueueRef]) -> None:
    found = counts.last_finished(client, refs)
    assert [
        (found[ref].completed_ms, found[ref].failed_ms, found[ref].oldest_waiting_ms)
        for ref in refs
    ] == [
        (1_764_000_060_000, 1_764_000_030_000, None),
        (None, 1_764_000_090_000, None),
        (None, None, 1_764_000_100_000),
        (None, None, None),
    ]
    assert found[refs[0]].newest_ms == 1_764_000_060_000


def test_when_the_newest_kept_jobs_finished_is_one_script_call(
    redis_client: Redis, monkeypatch: pytest.MonkeyPatch
) -> None:
    refs = seed_last_finished(redis_client)
    counts.last_finished(redis_client, refs)  # the script is loaded on first use
    with counted_sends(monkeypatch) as sent:
        assert_last_finished(redis_client, refs)
    assert len(sent) == 1
