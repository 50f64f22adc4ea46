"""Fields the decoder's tests did not look at (issue 26's mutation run): a
job that stalled once and then failed carries all sixteen fields the fast
path knows and must not fall back to the careful path; a flow child's hash,
which only the careful path reads, keeps its priority, stall count, parent
and unknown fields."""

from __future__ import annotations

import pytest

from queues.read import decode
from queues.read.decode import job_from_hash

STALLED_THEN_FAILED = {
    b"name": b"transcode-video",
    b"data": b'{"upload":"upl_7f3k2q","formats":["720p","1080p"]}',
    b"opts": b'{"attempts":3,"backoff":{"type":"exponential","delay":5000}}',
    b"timestamp": b"1764488000000",
    b"delay": b"0",
    b"priority": b"0",
    b"processedOn": b"1764488061230",
    b"finishedOn": b"1764488122045",
    b"ats": b"2",
    b"atm": b"1",
    b"pb": b"transcoder-3:81713:4f2c",
    b"stc": b"1",
    b"progress": b"62",
    b"returnvalue": b"null",
    b"failedReason": b"ffmpeg exited with code 137 (killed: out of memory)",
    b"stacktrace": b'["Error: ffmpeg exited with code 137"]',
}


def test_a_hash_with_every_common_field_takes_the_fast_path(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    assert STALLED_THEN_FAILED.keys() == decode._FAST_FIELDS

    def refuse(*args: object) -> None:
        raise AssertionError("the careful path was taken")

    monkeypatch.setattr(decode, "_careful", refuse)
    job = job_from_hash("88412", STALLED_THEN_FAILED)
    assert (job.stalled_counter, job.attempts_made, job.progress) == (1, 1, 62)


# A flow child's hash as bullmq writes it, with fields only the careful path
# reads (deduplication id, scheduler run, parent): every field still counts.
FLOW_CHILD = {
    b"name": b"resize-thumbnail",
    b"data": b'{"upload":"upl_7f3k2q","size":320}',
    b"opts": b'{"attempts":2}',
    b"timestamp": b"1764488000000",
    b"priority": b"3",
    b"stc": b"2",
    b"parentKey": b"bull:videos:88412",
    b"parent": b'{"id":"88412","queueKey":"bull:videos"}',
    b"deid": b"thumb-upl_7f3k2q",
    b"trace-id": b"4bf92f3577b34da6a3ce929d0e0e4736",
}


def test_the_careful_path_keeps_every_field_it_is_given() -> None:
    job = job_from_hash("thumb-1", FLOW_CHILD)
    assert (job.priority, job.stalled_counter) == (3, 2)
    assert job.parent == {"id": "88412", "queueKey": "bull:videos"}
    assert job.parent_key == "bull:videos:88412"
    assert job.extra == {"trace-id": "4bf92f3577b34da6a3ce929d0e0e4736"}


def test_a_parent_field_that_is_no_object_reads_as_no_parent() -> None:
    job = job_from_hash("thumb-2", {**FLOW_CHILD, b"parent": b'["88412"]'})
    assert job.parent is None
