"""The collector's fold of a stream's raw XRANGE reply (read from a real Redis):
minutes, counts and durations exact whatever the stream ids look like, and
the job times it remembers bounded."""

from __future__ import annotations

import json

import pytest
from redis import Redis

import queues.collector as collector
from queues.collector import MinuteBatch, QueueFolder
from queues.latency import bucket_of
from queues.raw_streams import SINGLE, RawStreams
from queues.read.refs import QueueRef

REF = QueueRef("bull", "fold")


def raw_entries(client: Redis, events: list[tuple[str, str, str]]) -> list[object]:
    """XADD ``(stream id, event, job id)`` each, then the raw XRANGE reply."""
    for stream_id, name, job_id in events:
        fields = {"event": name, "jobId": job_id}
        if name in ("completed", "failed"):
            fields["prev"] = "active"
        client.xadd(REF.keys.events, fields, id=stream_id)  # type: ignore[arg-type]
    reply: list[object] = RawStreams(client).on(SINGLE).xrange(REF.keys.events, "-", "+")
    return reply


def fields(batch: MinuteBatch) -> dict[str, dict[str, str]]:
    decoded: dict[str, dict[str, str]] = json.loads(batch.as_json())
    return decoded


def test_ids_whose_milliseconds_are_prefixes_of_each_other_fold_exactly(
    redis_client: Redis,
) -> None:
    # 5, 59, 599 ms: each id's "<ms>" starts like the next one's; several
    # events in one millisecond; a minute ends between 59,999 and 60,000 ms.
    entries = raw_entries(
        redis_client,
        [
            ("5-0", "waiting", "a"),
            ("5-1", "waiting", "b"),
            ("59-0", "active", "a"),
            ("59-1", "active", "b"),
            ("599-0", "completed", "a"),
            ("599-1", "waiting", "c"),
            ("59999-0", "active", "c"),
            ("59999-1", "failed", "b"),
            ("60000-0", "completed", "c"),
        ],
    )
    batches, lookups = QueueFolder(REF, "").fold(entries)
    assert lookups == []
    assert [(b.minute, b.last_id) for b in batches] == [(0, "59999-1"), (1, "60000-0")]
    first, second = fields(batches[0]), fields(batches[1])
    # Waits: a and b 54 ms, c 59,400 ms; runs: a 540 ms, b 59,940 ms (failed).
    assert first["add"] == {
        "c": "1",
        "f": "1",
        f"w{bucket_of(54)}": "2",
        f"w{bucket_of(59_400)}": "1",
        "ws": str(54 + 54 + 59_400),
        f"r{bucket_of(540)}": "1",
        f"r{bucket_of(59_940)}": "1",
        "rs": str(540 + 59_940),
    }
    assert first["max"] == {"wx": "59400", "rx": "59940"}
    assert second["add"] == {"c": "1", f"r{bucket_of(1)}": "1", "rs": "1"}
    assert second["max"] == {"rx": "1"}


def test_a_clock_step_counts_as_a_zero_duration() -> None:
    batch = MinuteBatch(0, "1-0")
    batch.duration("w", -40)
    batch.duration("w", 10)
    assert fields(batch)["add"] == {f"w{bucket_of(0)}": "1", f"w{bucket_of(10)}": "1", "ws": "10"}
    assert fields(batch)["max"] == {"wx": "10"}


def test_the_remembered_job_times_keep_only_the_newest(
    redis_client: Redis, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(collector, "TRACKED_JOBS", 3)
    folder = QueueFolder(REF, "")
    # Job 1 is ready again after the others: it counts as the newest.
    waiting = [(f"{n}-0", "waiting", job) for n, job in enumerate("12345", start=1)]
    folder.fold(raw_entries(redis_client, [*waiting, ("6-0", "waiting", "1")]))
    assert list(folder.ready_at) == [b"4", b"5", b"1"]
    redis_client.delete(REF.keys.events)
    batches, lookups = folder.fold(
        raw_entries(redis_client, [("10-0", "active", "2"), ("11-0", "active", "1")])
    )
    # Job 2 was forgotten: its wait is looked up in its hash; job 1's is known.
    assert [(lookup.kind, lookup.job_id) for lookup in lookups] == [("w", b"2")]
    assert batches[0].waits == [5]


def test_a_fold_goes_on_with_the_pending_minute_and_answers_what_it_added_to(
    redis_client: Redis,
) -> None:
    """Folds are recorded about once a second: until then each goes on with
    the last pending minute batch instead of starting one per pass."""
    folder = QueueFolder(REF, "")
    first, _ = folder.fold(raw_entries(redis_client, [("1000-0", "waiting", "a")]))
    redis_client.delete(REF.keys.events)
    second, _ = folder.fold(
        raw_entries(redis_client, [("1001-0", "active", "a"), ("2000-0", "completed", "a")])
    )
    assert second == first == folder.pending
    assert (first[0].waits, first[0].runs, first[0].last_id) == ([1], [999], "2000-0")
    assert fields(first[0])["add"]["c"] == "1"
    redis_client.delete(REF.keys.events)
    third, _ = folder.fold(raw_entries(redis_client, [("60000-0", "waiting", "b")]))
    # A new minute: a batch of its own; the pending one, untouched, is not answered.
    assert [batch.minute for batch in third] == [1]
    assert [batch.minute for batch in folder.pending] == [0, 1]
    assert folder.position == "60000-0"
