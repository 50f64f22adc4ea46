from __future__ import annotations

import pytest

from queues.errors import JobLockNotExist
from queues.pickup import decode_answer
from queues.read.decode import _careful, job_from_pairs

FRESH = [
    b"name", b"send", b"data", b'{"to":"a@example.com","n":[1,2]}',
    b"opts", b'{"attempts":3,"backoff":{"type":"fixed","delay":10}}',
    b"timestamp", b"1764488000000", b"delay", b"0", b"priority", b"0",
    b"processedOn", b"1764488000123", b"ats", b"1", b"pb", b"host:1:abc",
]  # fmt: skip
RETRIED = [
    *FRESH, b"atm", b"2", b"stc", b"1", b"failedReason", b"timeout",
    b"stacktrace", b'["Traceback one","Traceback two"]',
]  # fmt: skip
ODD = [
    [b"name", b"x", b"data", b"not json {", b"opts", b"[1]"],
    [b"name", b"x", b"attemptsMade", b"4", b"data", b"null"],
    [b"name", b"\xff\xfe", b"data", b'"\xff"'],
    [b"name", b"x", b"timestamp", b"12.5", b"delay", b"soon"],
    [b"name", b"x", b"stacktrace", b'{"not":"a list"}', b"returnvalue", b"7"],
    [b"name", b"x", b"parentKey", b"bull:p:1", b"custom", b"kept"],
    [b"name", b"x", b"stacktrace", b"[1, 2]"],
    [],
]  # fmt: skip


def _as_hash(flat: list[bytes]) -> dict[bytes, bytes]:
    return dict(zip(flat[0::2], flat[1::2], strict=True))


@pytest.mark.parametrize("flat", [FRESH, RETRIED, *ODD])
def test_the_fast_decoder_agrees_with_the_tolerant_one(flat: list[bytes]) -> None:
    assert job_from_pairs("42", flat) == _careful("42", _as_hash(flat))


def test_a_fresh_job_is_decoded_with_what_the_processor_needs() -> None:
    job = job_from_pairs("42", RETRIED)
    assert job.data == {"to": "a@example.com", "n": [1, 2]}
    assert job.attempts == 3
    assert job.attempts_made == 2
    assert job.stacktrace == ["Traceback one", "Traceback two"]


def test_pickup_answers_decode_to_a_job_a_rate_limit_or_a_due_time() -> None:
    got = decode_answer([FRESH, b"42", 0, 0], "moveToActive")
    assert got.job_id == "42"
    assert got.job is not None
    assert got.job.name == "send"
    limited = decode_answer([0, 0, 750, 0], "moveToActive")
    assert (limited.job, limited.rate_limit_ms, limited.next_delayed_due_ms) == (None, 750, None)
    waiting = decode_answer([0, 0, 0, 1764488009000], "moveToActive")
    assert (waiting.job, waiting.next_delayed_due_ms) == (None, 1764488009000)
    assert decode_answer(0, "moveToFinished").job is None


def test_a_closed_error_code_raises_its_exception() -> None:
    with pytest.raises(JobLockNotExist):
        decode_answer(-2, "moveToFinished", "42")
