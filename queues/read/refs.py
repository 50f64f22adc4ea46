"""``QueueRef``: a queue as every layer names it, ``<prefix>:<name>``.

Here rather than in a reader or the command line, so the runtime, the read
model, the dashboard and the live updates all import it from one place
without pulling in anything else.
"""

from __future__ import annotations

from dataclasses import dataclass

from queues.keys import DEFAULT_PREFIX, QueueKeys


@dataclass(frozen=True, slots=True, order=True)
class QueueRef:
    """A queue as the dashboard names it: ``<prefix>:<name>``."""

    prefix: str
    name: str

    def __post_init__(self) -> None:
        # QueueKeys validates both parts: a bad name never becomes a key.
        QueueKeys(self.name, self.prefix)

    @property
    def keys(self) -> QueueKeys:
        return QueueKeys(self.name, self.prefix)

    @property
    def qualified(self) -> str:
        return f"{self.prefix}:{self.name}"

    @classmethod
    def parse(cls, qualified: str, default_prefix: str = DEFAULT_PREFIX) -> QueueRef:
        """``"queue"`` or ``"prefix:queue"`` (the prefix may itself contain ':')."""
        prefix, sep, name = qualified.rpartition(":")
        return cls(prefix if sep else default_prefix, name)
