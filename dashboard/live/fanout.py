"""Handing a stream's batches to the sockets of this process: in process, bounded per socket.

A reader (dashboard.live.hub) calls ``deliver`` on each subscriber, which puts
the message in that socket's ``Inbox`` and returns: the reader never waits for
a socket, and each socket's task sends its inbox in order. Under daphne, a
socket whose task waits on an empty inbox (``Inbox.idle``) sends the batch
within ``deliver`` (``LiveConsumer._send_now``): same order, no task wake-up
per socket and batch. A ``Batch`` is shared read-only, and its frame is
encoded once per kind of subscription (``frame``). This replaced Channels'
channel layer (docs/live.md; figures in docs/benchmarks.md, "In-process
fan-out"). Past ``INBOX_MESSAGES`` waiting messages a queue's further batches
are dropped for that socket and one ``live.gap`` stands in for them.
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

# Messages (batches, gaps) a socket may leave waiting before it misses some:
# at 50 batches a second on a busy queue, about 5 s of them.
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
    """One stream's new events, as one read brought them; shared by every socket it reaches.

    Read-only for the sockets. ``first`` and ``last`` are the stream positions
    of its oldest and newest event, parsed once here rather than by each socket.
    """

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
        """The frame for sockets of this ``kind``: encoded by the first of them, reused
        by the rest (under daphne, framed once too: dashboard.live.outbox).

        ``kind`` must hold everything besides the batch that the frame depends on.
        """
        shared = self.frames.get(kind)
        if shared is None:
            shared = self.frames[kind] = SharedText(encode())
            self.encodings += 1
        return shared


class Inbox:
    """One socket's messages, in order: the client's frames and what the hub handed it.

    ``put`` takes what must not be dropped (the client's frames, which daphne
    already bounds: dashboard.live.outbox pauses reading; the socket's own
    replay barriers; the queue set, at most every few seconds). ``deliver``
    takes a stream's batches and gaps, bounded (module docstring).
    """

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
        """The socket's task waits for a message and none is queued: what comes now
        is the next thing it would handle (so the hub may hand it over directly)."""
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
