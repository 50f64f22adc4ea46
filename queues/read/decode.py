"""The one job decoder: a job hash (HGETALL, HMGET or a pick-up's field
list) into a :class:`queues.job.Job`.

Whatever the hash holds, from our runtime or any BullMQ version, decoding
never raises: malformed numbers become ``None`` (or 0 for counters), non-JSON
``data``/``opts`` keep their raw text in ``data_text``/``opts_text`` with
``data``/``opts`` left as ``None``/``{}``.

A busy worker decodes one hash per job and a list page fifty, so the common
case has a fast path: bytes keys, only fields it knows, valid UTF-8 and JSON,
integer numbers. Anything else raises inside it and goes through the careful
path, which the fast one must always agree with (tests/test_read_decode.py).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from queues import codec
from queues.job import Job

RawHash = dict[bytes, bytes] | dict[str, str] | dict[bytes | str, bytes | str]

# The fields the fast path decodes: what a job has while it waits, runs and
# finishes in the common case.
_FAST_FIELDS = frozenset(
    {
        b"name",
        b"data",
        b"opts",
        b"timestamp",
        b"delay",
        b"priority",
        b"processedOn",
        b"finishedOn",
        b"ats",
        b"atm",
        b"pb",
        b"stc",
        b"progress",
        b"returnvalue",
        b"failedReason",
        b"stacktrace",
    }
)
# Every field the careful path gives a Job attribute; the rest go to ``extra``.
_KNOWN_FIELDS = frozenset(
    [
        "name",
        "data",
        "opts",
        "timestamp",
        "delay",
        "priority",
        "processedOn",
        "finishedOn",
        "atm",
        "attemptsMade",
        "ats",
        "stc",
        "pb",
        "progress",
        "returnvalue",
        "failedReason",
        "stacktrace",
        "parentKey",
        "parent",
        "deid",
        "rjk",
        "defa",
    ]
)
# What the fast path raises when the careful path must decide.
_NOT_COMMON = (ValueError, TypeError, AttributeError, RecursionError)


def job_from_hash(job_id: str, raw: RawHash) -> Job:
    """The job a hash describes (an empty hash gives an empty Job)."""
    try:
        return _fast(job_id, raw)  # type: ignore[arg-type]
    except _NOT_COMMON:
        return _careful(job_id, raw)


def job_from_pairs(job_id: str, flat: Sequence[Any]) -> Job:
    """A job from the flat ``[field, value, ...]`` list a pick-up returns."""
    pairs = iter(flat)
    return job_from_hash(job_id, dict(zip(pairs, pairs, strict=False)))


def job_from_values(job_id: str, fields: Sequence[bytes], values: Sequence[Any]) -> Job:
    """A job from an HMGET of ``fields`` (absent fields are None)."""
    present = {name: value for name, value in zip(fields, values, strict=True) if value is not None}
    return job_from_hash(job_id, present)


def _count(raw: bytes | None) -> int:
    return 0 if raw is None else int(raw)


def _json_or_text(raw: bytes | None) -> Any:
    # progress and returnvalue: JSON, or the text as it is (careful path below).
    return None if raw is None else json.loads(raw.decode())


def _fast(job_id: str, raw: dict[bytes, bytes]) -> Job:
    """Raises one of _NOT_COMMON whenever the careful path is needed."""
    if not raw.keys() <= _FAST_FIELDS:
        raise ValueError("uncommon fields")
    get = raw.get
    data_raw = get(b"data")
    opts_raw = get(b"opts")
    data_text = None if data_raw is None else data_raw.decode()
    opts_text = None if opts_raw is None else opts_raw.decode()
    opts: Any = {} if opts_text is None else json.loads(opts_text)
    if type(opts) is not dict:
        raise TypeError("opts is not an object")
    stacktrace: list[str] = []
    trace_raw = get(b"stacktrace")
    if trace_raw is not None:
        parsed = json.loads(trace_raw.decode())
        if type(parsed) is not list or not all(type(line) is str for line in parsed):
            raise TypeError("stacktrace is not a list of strings")
        stacktrace = parsed
    timestamp = get(b"timestamp")
    processed_on = get(b"processedOn")
    finished_on = get(b"finishedOn")
    name = get(b"name")
    worker = get(b"pb")
    reason = get(b"failedReason")
    return Job(
        id=job_id,
        name="" if name is None else name.decode(),
        data_text=data_text,
        opts_text=opts_text,
        data=None if data_text is None else json.loads(data_text),
        opts=opts,
        timestamp=None if timestamp is None else int(timestamp),
        delay=_count(get(b"delay")),
        priority=_count(get(b"priority")),
        processed_on=None if processed_on is None else int(processed_on),
        finished_on=None if finished_on is None else int(finished_on),
        attempts_made=_count(get(b"atm")),
        attempts_started=_count(get(b"ats")),
        stalled_counter=_count(get(b"stc")),
        processed_by=None if worker is None else worker.decode(),
        progress=_json_or_text(get(b"progress")),
        returnvalue=_json_or_text(get(b"returnvalue")),
        failed_reason=None if reason is None else codec.failure_reason(reason.decode()),
        stacktrace=stacktrace,
    )


def _field(raw: RawHash, name: str) -> bytes | str | None:
    # Clients decoding responses give str keys, ours give bytes: accept both.
    fields: dict[Any, bytes | str] = raw  # type: ignore[assignment]
    value = fields.get(name.encode())
    return fields.get(name) if value is None else value


def _careful(job_id: str, raw: RawHash) -> Job:
    def t(name: str) -> str | None:
        return codec.text(_field(raw, name))

    def i(name: str, default: int | None = None) -> int | None:
        return codec.integer(_field(raw, name), default)

    data_text = t("data")
    opts_text = t("opts")
    opts = codec.loads(opts_text, {})
    stacktrace = codec.loads(t("stacktrace"), [])
    parent = codec.loads(t("parent"))
    attempts_made = i("atm")
    if attempts_made is None:
        attempts_made = i("attemptsMade", 0)
    return Job(
        id=job_id,
        name=t("name") or "",
        data_text=data_text,
        opts_text=opts_text,
        data=codec.loads(data_text),
        opts=opts if isinstance(opts, dict) else {},
        timestamp=i("timestamp"),
        delay=i("delay", 0) or 0,
        priority=i("priority", 0) or 0,
        processed_on=i("processedOn"),
        finished_on=i("finishedOn"),
        attempts_made=attempts_made or 0,
        attempts_started=i("ats", 0) or 0,
        stalled_counter=i("stc", 0) or 0,
        processed_by=t("pb"),
        progress=codec.loads(t("progress"), t("progress")),
        returnvalue=codec.loads(t("returnvalue"), t("returnvalue")),
        failed_reason=codec.failure_reason(_field(raw, "failedReason")),
        stacktrace=[str(s) for s in stacktrace] if isinstance(stacktrace, list) else [],
        parent_key=t("parentKey"),
        parent=parent if isinstance(parent, dict) else None,
        deduplication_id=t("deid"),
        scheduler_id=t("rjk"),
        deferred_failure=t("defa"),
        extra={
            codec.text(k) or "": codec.text(v) or ""
            for k, v in raw.items()
            if (codec.text(k) or "") not in _KNOWN_FIELDS
        },
    )
