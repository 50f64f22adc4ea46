"""Job options as BullMQ spells them, checked and turned into what addJob needs.

Callers pass a plain mapping with BullMQ's names (``attempts``, ``backoff``,
``delay``, ``priority``, ``lifo``, ``jobId``, ``removeOnComplete``, ...); the
``JobOptions`` TypedDict documents them for type checkers. The opts JSON stored
in the job hash uses BullMQ's short names for the keys it abbreviates
(``deduplication`` -> ``de``, ``keepLogs`` -> ``kl``, parent failure flags), so
BullMQ workers read our jobs unchanged; unknown keys are kept as given.
"""

from __future__ import annotations

import math
import time
from collections.abc import Mapping
from typing import Any, NamedTuple, TypedDict

from queues import codec
from queues.keys import validate_custom_job_id

MAX_PRIORITY = 2**21

# Long option name -> the short key BullMQ stores in the opts JSON.
_SHORT_NAMES = {
    "deduplication": "de",
    "keepLogs": "kl",
    "failParentOnFailure": "fpof",
    "continueParentOnFailure": "cpof",
    "ignoreDependencyOnFailure": "idof",
    "removeDependencyOnFailure": "rdof",
}
_PARENT_FLAGS = ("fpof", "cpof", "idof", "rdof")


class BackoffOptions(TypedDict, total=False):
    type: str  # "fixed" | "exponential"
    delay: int
    jitter: float


class KeepJobs(TypedDict, total=False):
    age: int  # seconds
    count: int
    limit: int


class DeduplicationOptions(TypedDict, total=False):
    id: str
    ttl: int  # ms


class ParentOptions(TypedDict):
    id: str
    queue: str  # the parent's "<prefix>:<queue>"


class JobOptions(TypedDict, total=False):
    attempts: int
    backoff: int | BackoffOptions
    delay: int
    priority: int
    lifo: bool
    jobId: str
    timestamp: int
    removeOnComplete: bool | int | KeepJobs
    removeOnFail: bool | int | KeepJobs
    stackTraceLimit: int
    deduplication: DeduplicationOptions
    keepLogs: int
    parent: ParentOptions


class InvalidJobOptions(ValueError):
    """Options that would store a job no runtime could run as asked."""


class PreparedJob(NamedTuple):
    """Everything the addJob script receives besides the queue's keys.

    A NamedTuple, not a frozen dataclass: just as immutable, and built several
    times faster, which shows in bulk adds (one per job)."""

    name: str
    data_json: str
    opts_json: str
    timestamp: int
    job_id: str = ""  # "" = take the next counter value
    delay: int = 0
    priority: int = 0
    lifo: bool = False
    dedup_id: str = ""  # "" = none
    dedup_ttl: int = 0
    parent_key: str = ""  # "" = none
    parent_json: str = ""  # "" = none


def to_json(value: Any) -> str:
    """A value a caller gives for a job field (data, options, progress) as
    codec.dumps writes it, or InvalidJobOptions saying why it cannot be."""
    try:
        return codec.dumps(value)
    except codec.UNENCODABLE as exc:
        raise InvalidJobOptions(f"not JSON-serialisable: {exc}") from None


def _whole(opts: Mapping[str, Any], key: str, low: int, high: float = math.inf) -> int:
    value = opts.get(key)
    if value is None:
        return 0
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise InvalidJobOptions(f"{key} must be a number, got {value!r}")
    if not math.isfinite(value) or value != int(value) or not low <= value <= high:
        raise InvalidJobOptions(f"{key} must be a whole number in [{low}, {high}], got {value!r}")
    return int(value)


def _stored_opts(opts: Mapping[str, Any]) -> dict[str, Any]:
    stored = {_SHORT_NAMES.get(key, key): value for key, value in opts.items()}
    backoff = stored.get("backoff")
    if isinstance(backoff, int | float) and not isinstance(backoff, bool):
        # A bare number means a fixed backoff; store the normal form.
        stored["backoff"] = {"type": "fixed", "delay": backoff}
    return stored


def _deduplication(stored: Mapping[str, Any]) -> tuple[str, int]:
    dedup = stored.get("de")
    if dedup is None:
        return "", 0
    if not isinstance(dedup, Mapping) or not isinstance(dedup.get("id"), str) or not dedup["id"]:
        raise InvalidJobOptions("deduplication needs a non-empty string id")
    return dedup["id"], _whole(dedup, "ttl", 0)


def _parent(opts: Mapping[str, Any], stored: Mapping[str, Any]) -> tuple[str, str]:
    parent = opts.get("parent")
    if parent is None:
        return "", ""
    if not isinstance(parent, Mapping) or not parent.get("id") or not parent.get("queue"):
        raise InvalidJobOptions("parent needs an id and a queue ('<prefix>:<name>')")
    record: dict[str, Any] = {"id": str(parent["id"]), "queueKey": str(parent["queue"])}
    record.update({flag: True for flag in _PARENT_FLAGS if stored.get(flag)})
    return f"{parent['queue']}:{parent['id']}", to_json(record)


def _clock_ms() -> int:
    return int(time.time() * 1000)


def prepare_job(
    name: str, data: Any, opts: Mapping[str, Any] | None, *, now_ms: int | None = None
) -> PreparedJob:
    """Check ``opts`` and build the addJob arguments (raises InvalidJobOptions)."""
    if not opts:
        # The common case in bulk adds: nothing to check or encode.
        return PreparedJob(name, to_json(data), "{}", now_ms or _clock_ms())
    job_id = opts.get("jobId")
    if job_id is not None and job_id != "":
        try:
            validate_custom_job_id(str(job_id))
        except ValueError as exc:
            raise InvalidJobOptions(str(exc)) from None
    stored = _stored_opts(opts)
    dedup_id, dedup_ttl = _deduplication(stored)
    parent_key, parent_json = _parent(opts, stored)
    timestamp = _whole(opts, "timestamp", 0) or now_ms or _clock_ms()
    _whole(opts, "attempts", 0)
    return PreparedJob(
        name=name,
        data_json=to_json(data),
        opts_json=to_json(stored),
        job_id="" if job_id is None else str(job_id),
        timestamp=timestamp,
        delay=_whole(opts, "delay", 0),
        priority=_whole(opts, "priority", 0, MAX_PRIORITY),
        lifo=bool(opts.get("lifo")),
        dedup_id=dedup_id,
        dedup_ttl=dedup_ttl,
        parent_key=parent_key,
        parent_json=parent_json,
    )
