"""The one job decoder: its fast path agrees with the careful one on every
hash, takes the common hashes without help, and list rows (HMGET) decode
through it exactly as whole hashes do."""

from __future__ import annotations

import itertools
from typing import Any

import pytest
from redis import Redis

from queues.read import decode
from queues.read.decode import _careful, job_from_hash, job_from_values
from queues.read.lists import ROW_FIELDS, job_page
from queues.read.refs import QueueRef

COMMON = {
    b"name": b"send",
    b"data": b'{"to":"a@example.com"}',
    b"opts": b'{"attempts":3}',
    b"timestamp": b"1764488000000",
    b"delay": b"0",
    b"priority": b"0",
    b"processedOn": b"1764488000123",
    b"finishedOn": b"1764488000456",
    b"ats": b"2",
    b"atm": b"2",
    b"pb": b"host:1:abc",
    b"progress": b'{"step":1,"of":5}',
    b"returnvalue": b'{"sent":true}',
    b"failedReason": b"timeout",
    b"stacktrace": b'["Traceback one"]',
}
# One odd value per field the fast path reads: each must send it to the careful path
# (or give the careful path's answer).
ODD_VALUES = {
    b"name": [b"\xff\xfe"],
    b"data": [b"not json {", b"[" * 5000, b"1e999"],
    b"opts": [b"[1]", b"null", b"{bad"],
    b"timestamp": [b"12.5", b"yesterday", b"9" * 5000],
    b"delay": [b"soon", b"-5", b"3.0"],
    b"finishedOn": [b"", b"1e3"],
    b"atm": [b"x"],
    b"progress": [b"42", b"half way", b'"quoted"'],
    b"returnvalue": [b"plain text", b"null"],
    b"failedReason": [b'"json-encoded by bullmq python"', b"\xff"],
    b"stacktrace": [b'{"not":"a list"}', b"[1, 2]", b"oops"],
}
UNCOMMON = [
    {b"name": b"x", b"attemptsMade": b"4"},
    {b"name": b"x", b"parentKey": b"bull:p:1", b"parent": b'{"id":"1","queueKey":"bull:p"}'},
    {b"name": b"x", b"custom": b"kept", b"deid": b"d", b"rjk": b"r", b"defa": b"why"},
    {"name": "str keys", "timestamp": "5"},
    {},
]


def _cases() -> list[dict[bytes, bytes] | dict[str, str]]:
    cases: list[dict[bytes, bytes] | dict[str, str]] = [COMMON]
    for name, values in ODD_VALUES.items():
        cases += [{**COMMON, name: value} for value in values]
    for a, b in itertools.combinations(list(COMMON), 2):  # any two fields missing
        cases.append({k: v for k, v in COMMON.items() if k not in (a, b)})
    return cases + UNCOMMON  # type: ignore[operator]


@pytest.mark.parametrize("raw", _cases())
def test_the_fast_path_agrees_with_the_careful_one(raw: dict[bytes, bytes]) -> None:
    assert job_from_hash("42", raw) == _careful("42", raw)


def test_a_common_hash_never_needs_the_careful_path(monkeypatch: pytest.MonkeyPatch) -> None:
    def refuse(*args: object) -> None:
        raise AssertionError("the careful path was taken")

    monkeypatch.setattr(decode, "_careful", refuse)
    job = job_from_hash("42", COMMON)
    assert (job.name, job.attempts, job.finished_on) == ("send", 3, 1764488000456)
    assert (job.progress, job.returnvalue) == ({"step": 1, "of": 5}, {"sent": True})
    # A list row: the HMGET of the row fields of a finished job.
    values = [COMMON.get(name) for name in ROW_FIELDS]
    assert job_from_values("42", ROW_FIELDS, values).failed_reason == "timeout"


def test_a_quoted_reason_reads_unquoted_on_both_paths() -> None:
    raw = {**COMMON, b"failedReason": b'"boom"'}
    assert job_from_hash("1", raw).failed_reason == "boom"


def test_a_list_row_decodes_like_the_whole_hash_minus_what_rows_skip(
    redis_client: Redis,
) -> None:
    ref = QueueRef("bull", "rows")
    keys = ref.keys
    for index, raw in enumerate(_cases()[:40]):
        job_id = f"j{index}"
        if raw:
            redis_client.hset(keys.job(job_id), mapping=raw)  # type: ignore[arg-type]
        redis_client.zadd(keys.failed, {job_id: index})
    page = job_page(redis_client, ref, "failed", size=50)
    assert len(page.rows) == 40
    # Data (possibly megabytes), return values and traces are never fetched for a list.
    assert {b"data", b"returnvalue", b"stacktrace"}.isdisjoint(ROW_FIELDS)
    shown = ("name", "timestamp", "processed_on", "finished_on", "attempts_made")
    shown += ("attempts_started", "opts", "progress", "failed_reason", "delay", "priority")
    for row in page.rows:
        raw: Any = redis_client.hgetall(keys.job(row.job.id))
        whole = _careful(row.job.id, raw)
        assert row.missing == (not raw)
        for attribute in shown:
            assert getattr(row.job, attribute) == getattr(whole, attribute), attribute
        assert row.job.data is None
