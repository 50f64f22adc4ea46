"""Handing a stream's batches to this process's sockets: each socket's bounded
``Inbox``, a ``Batch`` shared read-only and encoded once per kind of
subscription. It replaced Channels' channel layer (docs/live.md).
"""

from __future__ import annotations

import asyncio
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Protocol

from dashboard.live.outbox import SharedText
from dashboard.live.streams import EventPayload
from queues.read.stream import parse_stream_id

# Messages a socket may leave waiting (about 5 s of a busy queue's batches);
# past it a queue's further batches give way to one gap.
INBOX_MESSAGES = 256

Message = dict[str, Any]


class Subscriber(Protocol):
    """What a stream hands its batches to (a socket's subscription to one queue)."""

    @property
    def bodies(self) -> bool:
        """Whether it shows events (their rows), not only counts them."""

    def deliver(self, message: Message) -> None: ...


@dataclass(eq=False)
class Batch:
    """One stream's new events as one read brought them, read-only for the
    sockets; ``first`` and ``last`` parsed once here rather than by each."""

    queue: str
    events: list[EventPayload]
    sent_at: float  # time.monotonic() when the reader handed it out
    first: tuple[int, int] = field(init=False)
    last: tuple[int, int] = field(init=False)
    # Encoded frames by kind of subscription (see ``frame``); counted for the tests.
    frames: dict[object, SharedText] = field(default_factory=dict)
    encodings: int = 0

    def __post_init__(self) -> None:
        self.first = parse_stream_id(self.events[0]["id"]) or (0, 0)
        self.last = parse_stream_id(self.events[-1]["id"]) or (0, 0)

    @property
    def tip(self) -> str:
        return self.events[-1]["id"]

    def message(self) -> Message:
        return {"type": "live.events", "queue": self.queue, "tip": self.tip, "batch": self}

    def frame(self, kind: object, encode: Callable[[], str]) -> SharedText:
        """The frame for sockets of this ``kind`` (all the frame depends on
        besides the batch), encoded by the first of them."""
        shared = self.frames.get(kind)
        if shared is None:
            shared = self.frames[kind] = SharedText(encode())
            self.encodings += 1
        return shared


class Inbox:
    """One socket's messages in order. ``put`` takes what must not be dropped
    (client frames, which the outbox bounds; barriers; the queue set);
    ``deliver`` the streams' batches and gaps, bounded."""

    def __init__(self) -> None:
        self.limit = INBOX_MESSAGES
        self._messages: deque[Message] = deque()
        self._ready = asyncio.Event()
        self._waiting = False  # the socket's task waits in ``get``
        # A queue whose batches are dropped: the gap marker waiting in the inbox for it.
        self._lagging: dict[str, Message] = {}

    def __len__(self) -> int:
        return len(self._messages)

    @property
    def idle(self) -> bool:
        """The socket's task waits with nothing queued: what comes now is next."""
        return self._waiting and not self._messages

    def put(self, message: Message) -> None:
        self._messages.append(message)
        self._ready.set()

    def deliver(self, message: Message) -> None:
        """A queue's batch or gap (with its ``queue`` and newest id, ``tip``); never waits."""
        queue = message["queue"]
        marker = self._lagging.get(queue)
        if marker is not None:
            marker["tip"] = message["tip"]  # the page will continue from the newest missed
            return
        if len(self._messages) >= self.limit:
            message = {"type": "live.gap", "queue": queue, "tip": message["tip"]}
            self._lagging[queue] = message
        self.put(message)

    async def get(self) -> Message:
        while not self._messages:
            self._ready.clear()
            self._waiting = True
            try:
                await self._ready.wait()
            finally:
                self._waiting = False
        message = self._messages.popleft()
        if message["type"] == "live.gap" and self._lagging.get(message["queue"]) is message:
            del self._lagging[message["queue"]]  # later batches of the queue are kept again
        return message
