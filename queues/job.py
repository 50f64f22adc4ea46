"""A job as read from its hash: every field optional, nothing trusted.

``Job.from_hash`` accepts whatever HGETALL returned (bytes keys and values),
from our runtime or any BullMQ version, and never raises: malformed numbers
become ``None``, non-JSON ``data``/``opts`` keep their raw text in
``data_text``/``opts_text`` with ``data``/``opts`` left as ``None``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from queues import codec

RawHash = dict[bytes, bytes] | dict[str, str] | dict[bytes | str, bytes | str]


def _field(raw: RawHash, name: str) -> bytes | str | None:
    # Clients decoding responses give str keys, ours give bytes: accept both.
    fields: dict[Any, bytes | str] = raw  # type: ignore[assignment]
    value = fields.get(name.encode())
    return fields.get(name) if value is None else value


@dataclass(slots=True)
class Job:
    id: str
    name: str = ""
    data_text: str | None = None
    opts_text: str | None = None
    data: Any = None
    opts: dict[str, Any] = field(default_factory=dict)
    timestamp: int | None = None
    delay: int = 0
    priority: int = 0
    processed_on: int | None = None
    finished_on: int | None = None
    attempts_made: int = 0
    attempts_started: int = 0
    stalled_counter: int = 0
    processed_by: str | None = None
    progress: Any = None
    returnvalue: Any = None
    failed_reason: str | None = None
    stacktrace: list[str] = field(default_factory=list)
    parent_key: str | None = None
    parent: dict[str, Any] | None = None
    deduplication_id: str | None = None
    scheduler_id: str | None = None
    deferred_failure: str | None = None
    extra: dict[str, str] = field(default_factory=dict)

    @property
    def attempts(self) -> int:
        """Attempts allowed by opts (1 when absent or malformed)."""
        value = self.opts.get("attempts", 1)
        return value if isinstance(value, int) and value > 0 else 1

    @classmethod
    def from_hash(cls, job_id: str, raw: RawHash) -> Job:
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
        return cls(
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
