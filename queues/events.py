"""The events stream of a queue: one entry per lifecycle event.

``Event.from_entry`` decodes one XREAD/XRANGE entry tolerantly (any writer,
any version). The live reader (``QueueEvents``) builds on it.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from queues import codec


@dataclass(frozen=True, slots=True)
class Event:
    stream_id: str  # "<ms>-<seq>", the resume point
    event: str
    job_id: str | None = None
    fields: dict[str, str] = field(default_factory=dict)

    @property
    def timestamp_ms(self) -> int:
        return codec.integer(self.stream_id.split("-", 1)[0], 0) or 0

    @classmethod
    def from_entry(cls, stream_id: bytes | str, raw: dict[bytes, bytes] | dict[str, str]) -> Event:
        fields = {codec.text(k) or "": codec.text(v) or "" for k, v in raw.items()}
        name = fields.pop("event", "")
        return cls(codec.text(stream_id) or "", name, fields.pop("jobId", None), fields)
