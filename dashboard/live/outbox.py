"""A socket's outbox: what the server holds for a client that has not taken it yet, bounded.

Daphne gives an application no backpressure (its ``send`` returns at once),
so a client that stops reading grew the server without bound
(docs/benchmarks.md, "Where the memory went"). Twisted does say when a
transport's write buffer is full: ``Outbox`` is a streaming producer on the
socket's transport with ``bufferSize`` = ``OUTBOX_BYTES``. While it is paused
the consumer sends no events (it sends ``gap`` later) and the transport reads
no frames; one paused for ``STALL_CLOSE_S`` is closed. ``SocketOutbox`` (ASGI
middleware) finds the transport through daphne's ``send`` (a partial of
``Server.handle_reply``, maybe wrapped by Channels' ``SessionMiddleware`` as
``real_send``) and puts the ``Outbox`` in ``scope["outbox"]``; under any other
server it watches nothing and is never full (uvicorn's ``send`` waits instead).

It also sends a ``SharedText`` (a batch's frame, dashboard.live.fanout)
framed once as autobahn's ``PreparedMessage`` and written by each socket's
protocol, in the ASGI path's order: the per-socket ASGI path was about two
thirds of daphne's CPU per message (docs/benchmarks.md, "Runs of 2026-12-02
(perf-live)").
"""

from __future__ import annotations

import asyncio
import functools
import inspect
from typing import Any

from autobahn.websocket.protocol import PreparedMessage

# What a socket's transport may hold before the socket counts as behind. One
# message more may follow it (the one that crossed the line: at most
# consumer.MESSAGE_BYTES).
OUTBOX_BYTES = 256 * 1024
# A socket whose outbox stays full this long is closed (CLOSE_TOO_SLOW) and its
# page reconnects later. Twisted resumes its producer once everything was
# written, so a socket must take its full outbox (up to twice OUTBOX_BYTES) in
# this time: a page on a 40 KB/s link keeps up, a tab that sleeps does not.
STALL_CLOSE_S = 15.0


class SharedText:
    """A text message that many sockets send unchanged, framed once when first sent."""

    __slots__ = ("_prepared", "text")

    def __init__(self, text: str) -> None:
        self.text = text
        self._prepared: PreparedMessage | None = None

    def prepared(self) -> PreparedMessage:
        if self._prepared is None:
            # A server's frames are not masked.
            self._prepared = PreparedMessage(
                self.text.encode(), isBinary=False, applyMask=False, doNotCompress=False
            )
        return self._prepared


class Outbox:
    """Twisted's streaming-producer interface on one socket's transport (or none)."""

    def __init__(self, protocol: Any = None) -> None:
        """``protocol``: daphne's WebSocket protocol of the socket (autobahn's), or None."""
        self.full = False
        self.drained = asyncio.Event()
        self.drained.set()
        self._protocol = protocol
        transport: Any = getattr(protocol, "transport", None)
        self._transport = transport
        if transport is not None:
            # The HTTP channel that carried the upgrade is still registered as
            # the transport's producer; a transport has one.
            transport.unregisterProducer()
            if hasattr(transport, "bufferSize"):
                transport.bufferSize = OUTBOX_BYTES
            transport.registerProducer(self, True)

    def pauseProducing(self) -> None:
        # Called by the transport on each write past bufferSize.
        if not self.full:
            self.full = True
            self.drained.clear()
            self._transport.pauseProducing()

    def resumeProducing(self) -> None:
        # Called once the transport has written everything it held.
        if self.full:
            self.full = False
            self.drained.set()
            self._transport.resumeProducing()

    def stopProducing(self) -> None:
        # The connection is gone: nothing waits for it any more.
        self.full = False
        self.drained.set()

    def can_send_shared(self) -> bool:
        """Whether ``send_shared`` writes now: under daphne, on an open socket."""
        protocol = self._protocol
        return protocol is not None and bool(protocol.state == protocol.STATE_OPEN)

    def send_shared(self, message: SharedText) -> bool:
        """Write ``message`` as its prepared frame; False when the socket must send it
        through ASGI instead (not under daphne, or not open: daphne's ``send``
        then does what it does for a closing socket)."""
        if not self.can_send_shared():
            return False
        self._protocol.sendPreparedMessage(message.prepared())
        return True

    async def wait_drained(self, timeout: float) -> bool:
        """True once the client has taken what it was sent, False after ``timeout`` s."""
        try:
            await asyncio.wait_for(self.drained.wait(), timeout)
        except TimeoutError:
            return False
        return True


def daphne_protocol(send: Any) -> Any:
    """Daphne's WebSocket protocol (autobahn's, on a Twisted transport) under its
    ``send``; None under other servers."""
    while inspect.ismethod(send) and hasattr(send.__self__, "real_send"):
        send = send.__self__.real_send  # Channels' session wrapper (see above)
    if not isinstance(send, functools.partial) or not send.args:
        return None
    protocol = send.args[0]
    transport = getattr(protocol, "transport", None)
    needed = ("registerProducer", "unregisterProducer", "pauseProducing", "resumeProducing")
    if not all(hasattr(transport, name) for name in needed):
        return None
    return protocol if hasattr(protocol, "sendPreparedMessage") else None


class SocketOutbox:
    """Gives each WebSocket its ``Outbox`` in ``scope["outbox"]``."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> Any:
        outbox = Outbox(daphne_protocol(send))
        return await self.inner(dict(scope, outbox=outbox), receive, send)
