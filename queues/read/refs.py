"""``QueueRef``: a queue as every layer names it, ``<prefix>:<name>``, and
the Redis connection it lives on.

Here rather than in a reader or the command line, so the runtime, the read
model, the dashboard and the live updates all import it from one place
without pulling in anything else.

The connection is a field here rather than a type of the dashboard's
wrapping a QueueRef: every answer of the read model carries its ``ref``
(summaries, job pages, job details, flow nodes), so the URLs, the JSON, the
live subscriptions and the audit built from those answers name the right
server with no second value passed alongside. The runtime ignores it: a
client is already one server, and the keys do not depend on it. A queue of
the same name on two servers is two refs (they compare unequal).
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from queues.keys import DEFAULT_PREFIX, QueueKeys

# The connection of REDIS_URL, ECHOMQ_PREFIXES and ECHOMQ_QUEUES (dashboard.core.connections).
DEFAULT_CONNECTION = "default"


@dataclass(frozen=True, slots=True, order=True)
class QueueRef:
    """A queue as the dashboard names it: ``<prefix>:<name>`` on ``connection``."""

    prefix: str
    name: str
    # A name dashboard.core.connections validated (letters, digits, "-", "_": no space).
    connection: str = DEFAULT_CONNECTION

    def __post_init__(self) -> None:
        # QueueKeys validates both parts: a bad name never becomes a key.
        QueueKeys(self.name, self.prefix)

    @property
    def keys(self) -> QueueKeys:
        return QueueKeys(self.name, self.prefix)

    @property
    def qualified(self) -> str:
        return f"{self.prefix}:{self.name}"

    @property
    def address(self) -> str:
        """The queue across connections, one string (a live subscription's name):
        ``prefix:name`` on the default connection, ``<connection> prefix:name``
        on another. Neither a prefix nor a queue name may hold a space, so the
        first space (if any) ends the connection's name."""
        if self.connection == DEFAULT_CONNECTION:
            return self.qualified
        return f"{self.connection} {self.qualified}"

    @classmethod
    def from_address(cls, address: str) -> QueueRef:
        """The inverse of :attr:`address` (InvalidName when the queue part is not one)."""
        connection, space, qualified = address.partition(" ")
        if not space:
            return cls.parse(address)
        return cls.parse(qualified).on(connection)

    def on(self, connection: str) -> QueueRef:
        """The queue of this name on ``connection`` (itself when already there)."""
        return self if connection == self.connection else replace(self, connection=connection)

    @classmethod
    def parse(cls, qualified: str, default_prefix: str = DEFAULT_PREFIX) -> QueueRef:
        """``"queue"`` or ``"prefix:queue"`` (the prefix may itself contain ':')."""
        prefix, sep, name = qualified.rpartition(":")
        return cls(prefix if sep else default_prefix, name)
