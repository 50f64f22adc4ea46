"""A socket's outbox, bounded: daphne's ``send`` never waits, so a client that
stopped reading grew the server without bound. ``Outbox`` is a Twisted
streaming producer on the socket's transport (found through daphne's ``send``;
under other servers it is never full) and writes a ``SharedText`` framed once
for every socket. Design and figures: docs/live.md ("Bounded per socket").
"""

from __future__ import annotations

import asyncio
import functools
import inspect
from collections.abc import Callable
from typing import Any

from autobahn.websocket.protocol import PreparedMessage

# What a socket's transport may hold before the socket counts as behind (plus
# the message that crossed the line).
OUTBOX_BYTES = 256 * 1024
# A socket full this long is closed: a page on a 40 KB/s link takes its outbox
# in time (Twisted resumes once all is written), a sleeping tab does not.
STALL_CLOSE_S = 15.0


class SharedText:
    """A text message that many sockets send unchanged, framed once when first sent."""

    def __init__(self, text: str) -> None:
        self.text = text

    @functools.cached_property
    def prepared(self) -> PreparedMessage:
        # A server's frames are not masked.
        return PreparedMessage(
            self.text.encode(), isBinary=False, applyMask=False, doNotCompress=False
        )


class Outbox:
    """Twisted's streaming-producer interface on one socket's transport (or none);
    ``on_full`` is called when the transport's buffer fills."""

    def __init__(self, protocol: Any = None) -> None:
        """``protocol``: daphne's WebSocket protocol of the socket (autobahn's), or None."""
        self.full = False
        self.drained = asyncio.Event()
        self.drained.set()
        self.on_full: Callable[[], object] = lambda: None
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
            self.on_full()

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
        protocol = self._protocol
        return protocol is not None and bool(protocol.state == protocol.STATE_OPEN)

    def send_shared(self, message: SharedText) -> bool:
        """Write the prepared frame; False: send it through ASGI instead."""
        if not self.can_send_shared():
            return False
        self._protocol.sendPreparedMessage(message.prepared)
        return True


def daphne_protocol(send: Any) -> Any:
    """Daphne's WebSocket protocol under a socket's ``send`` (a partial of
    ``Server.handle_reply``), for the socket's ``Outbox``; None under other servers."""
    while inspect.ismethod(send) and hasattr(send.__self__, "real_send"):
        send = send.__self__.real_send  # Channels' SessionMiddleware wraps it
    if not isinstance(send, functools.partial) or not send.args:
        return None
    protocol = send.args[0]
    transport = getattr(protocol, "transport", None)
    needed = ("registerProducer", "unregisterProducer", "pauseProducing", "resumeProducing")
    if not all(hasattr(transport, name) for name in needed):
        return None
    return protocol if hasattr(protocol, "sendPreparedMessage") else None
