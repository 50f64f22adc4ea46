"""The decoder's fast path takes every common hash (issue 26's mutation run):
a job that stalled once and then finished carries all sixteen fields the
fast path knows, and must not fall back to the careful path either."""

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
