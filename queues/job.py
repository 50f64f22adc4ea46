"""A job as read from its hash: every field optional, nothing trusted.

``queues.read.decode`` is the one decoder that builds it from a hash.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


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
