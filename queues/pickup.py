"""Decoding a pick-up answer on the worker's hot path.

moveToActive and moveToFinished-with-fetch-next answer
``{fields, id, rate_limit_ms, next_delayed_due_ms, broken}`` (see
``queues.commands.transitions.decode_fetched`` for the general decoder). A
busy worker decodes one of these per job, so this module has a fast path for
the hashes our runtime and BullMQ write in the common case (known fields,
valid UTF-8 and JSON, integer numbers); anything else goes through the
tolerant :meth:`Job.from_hash`, which the fast path must always agree with.
"""

from __future__ import annotations

import json
from typing import Any

from queues.commands.transitions import Fetched
from queues.errors import decode_skipped, raise_for_code
from queues.job import Job

# The fields a job can have when a worker picks it up in the common case.
_FAST_FIELDS = frozenset(
    {
        b"name",
        b"data",
        b"opts",
        b"timestamp",
        b"delay",
        b"priority",
        b"processedOn",
        b"ats",
        b"atm",
        b"pb",
        b"stc",
        b"failedReason",
        b"stacktrace",
    }
)
_NOTHING = Fetched(None, None)


def _count(raw: bytes | None) -> int:
    return 0 if raw is None else int(raw)


def _fast_job(job_id: str, raw: dict[bytes, bytes]) -> Job:
    """Raises (ValueError, TypeError ...) whenever the careful path is needed."""
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
        attempts_made=_count(get(b"atm")),
        attempts_started=_count(get(b"ats")),
        stalled_counter=_count(get(b"stc")),
        processed_by=None if worker is None else worker.decode(),
        failed_reason=None if reason is None else reason.decode(),
        stacktrace=stacktrace,
    )


def job_from_fields(job_id: str, flat: list[Any]) -> Job:
    """A job from the flat ``[field, value, ...]`` list a pick-up returns."""
    pairs = iter(flat)
    raw = dict(zip(pairs, pairs, strict=False))
    try:
        return _fast_job(job_id, raw)
    except (ValueError, TypeError, AttributeError, RecursionError):
        return Job.from_hash(job_id, raw)


def decode_answer(answer: Any, command: str, job_id: str | None = None) -> Fetched:
    """A pick-up answer as a :class:`Fetched`; a closed error code raises."""
    if type(answer) is list and len(answer) >= 4:
        fields, raw_id, limit, due = answer[0], answer[1], answer[2], answer[3]
        # Empty (falsy) in the common case: nothing to decode.
        broken = tuple(decode_skipped(answer[4])) if len(answer) > 4 and answer[4] else ()
        if type(fields) is list and raw_id:
            fetched_id = raw_id.decode() if type(raw_id) is bytes else str(raw_id)
            return Fetched(job_from_fields(fetched_id, fields), fetched_id, broken=broken)
        due_ms = int(due) if due and int(due) > 0 else None
        return Fetched(None, None, int(limit or 0), due_ms, broken)
    raise_for_code(answer, command, job_id)
    return _NOTHING
