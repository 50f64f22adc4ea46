from __future__ import annotations

import pytest

from queues import codec
from queues.read.decode import job_from_hash


@pytest.mark.parametrize(
    ("raw", "shown"),
    [
        (b'"boom"', "boom"),  # bullmq's Python port JSON-encodes the reason
        (b"plain reason", "plain reason"),
        (b'"unterminated', '"unterminated'),
        (b'"a" and "b"', '"a" and "b"'),
        (b"\xff\xfe", "\ufffd\ufffd"),
        (None, None),
    ],
)
def test_failure_reasons_are_shown_as_written_or_unquoted(raw: bytes | None, shown: str) -> None:
    assert codec.failure_reason(raw) == shown


def test_a_hash_of_garbage_still_gives_a_job() -> None:
    job = job_from_hash(
        "7",
        {
            b"name": b"<script>x</script>",
            b"data": b"{not json",
            b"opts": b"[1, 2]",
            b"timestamp": b"yesterday",
            b"attemptsMade": b"3",
            b"stacktrace": b'{"not": "a list"}',
            b"failedReason": b'"quoted"',
            b"custom": b"\xff",
        },
    )
    assert job.name == "<script>x</script>"
    assert job.data is None
    assert job.data_text == "{not json"
    assert job.opts == {}
    assert job.attempts == 1
    assert job.timestamp is None
    assert job.attempts_made == 3
    assert job.stacktrace == []
    assert job.failed_reason == "quoted"
    assert job.extra == {"custom": "\ufffd"}


@pytest.mark.parametrize(
    ("raw", "value"), [(b"12", 12), (b"12.7", 12), ("x", None), (None, None), (b"\xff", None)]
)
def test_integers_tolerate_floats_and_garbage(raw: bytes | str | None, value: int | None) -> None:
    assert codec.integer(raw) == value
