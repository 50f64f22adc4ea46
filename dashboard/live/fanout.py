"""Handing a stream's batches to the sockets of this process: in process, bounded per socket.

The readers (dashboard.live.hub) and the sockets that want what they read
live in the same server process, so a reader hands each batch to its
stream's subscribers itself: it calls ``deliver`` on each, which puts the
message in that socket's ``Inbox`` and returns, never waiting for the socket.
Each socket's own task takes its inbox in order and sends (so a socket whose
``send`` waits, under a server with backpressure, delays only itself). Under
daphne, whose sockets write without waiting, a socket whose task waits with
an empty inbox (``Inbox.idle``) sends the batch within ``deliver`` instead
(dashboard.live.consumer, ``LiveConsumer._send_now``): nothing is queued
before it, so the order is the same, and no task wakes per socket and batch. A
``Batch`` is shared read-only by every socket it reaches, and the frame a
socket sends for it is encoded once per kind of subscription (``frame``): a
hundred sockets that want every event of a queue send the same text, framed
once under daphne (dashboard.live.outbox, ``SharedText``).

This replaces Channels' channel layer for these messages (a PUBLISH per batch
through Redis pub/sub, channels-redis's receive loop pushing the message onto
one asyncio queue per socket, and Channels' per-message task and
``asyncio.wait`` in each consumer), and the JSON encoding of each batch once
per socket. Measured on the shared 2-CPU VM on 2026-12-01 (15:42-15:57 UTC,
load average 6-16 from other work), three pairs each, this code and the
channel layer's alternating (docs/benchmarks.md, "In-process fan-out"):
``bench/live.py --sockets-only`` (20 sockets, 200 events/s): XADD-to-socket
p50 18-24 ms against 27-35, p99 35-63 ms against 64-366, daphne 17-18% of a
core against 22-25%; with ``--pages 100`` (100 sockets, 200 events/s): p50
212-351 ms against 1,150-1,487, p99 0.5-1.1 s against 2.5-4.9 s, daphne
14-22% against 21-26%. ``bench/abuse.py --phases c`` (100 sockets at 1,000
events/s) could not be measured under that load: its 100-socket client fell
behind with either code.

What a socket does not take in time is bounded: past ``INBOX_MESSAGES``
waiting messages, a queue's further batches are not kept; the socket gets one
``live.gap`` for that queue in their place (its page reloads counts and
lists and continues from the newest of them), so it holds at most
``INBOX_MESSAGES`` plus one marker per queue it watches.
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
