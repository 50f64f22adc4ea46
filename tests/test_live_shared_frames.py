"""A batch's frame, framed once and written by every socket that sends it (dashboard.live.outbox).

Over autobahn's real server protocol (daphne's base) on Twisted's in-memory
transport, after a real opening handshake: what ``Outbox.send_shared`` writes
must be the very bytes autobahn's own ``sendMessage`` (the ASGI path under
daphne) writes for the same text, and a socket that is not open must send
through ASGI instead. The end-to-end path (a real daphne, sockets that read
and sockets that do not) is tests/test_live_outbox.py's.
"""

from __future__ import annotations

from autobahn.twisted.websocket import WebSocketServerFactory, WebSocketServerProtocol
from twisted.internet.testing import StringTransport
from twisted.web.http import HTTPChannel

from dashboard.live.outbox import Outbox, SharedText

HANDSHAKE = (
    b"GET /ws/live/ HTTP/1.1\r\nHost: localhost\r\nUpgrade: websocket\r\n"
    b"Connection: Upgrade\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n"
    b"Sec-WebSocket-Version: 13\r\n\r\n"
)


def open_websocket() -> tuple[WebSocketServerProtocol, StringTransport]:
    """A server-side WebSocket past its handshake, its transport emptied."""
    factory = WebSocketServerFactory()
    factory.protocol = WebSocketServerProtocol
    protocol = factory.buildProtocol(None)
    transport = StringTransport()
    # As under daphne: the HTTP channel that carried the upgrade is its producer.
    transport.registerProducer(HTTPChannel(), True)
    protocol.makeConnection(transport)
    protocol.dataReceived(HANDSHAKE)
    assert protocol.state == protocol.STATE_OPEN
    transport.clear()
    return protocol, transport


def test_sockets_write_the_same_frame_as_sendmessage_framed_once() -> None:
    # Sizes on both sides of the 7-bit and 16-bit length encodings.
    for size in (10, 300, 70_000):
        text = '{"type": "events", "pad": "' + "é" * size + '"}'
        shared = SharedText(text)
        sockets = [open_websocket() for _ in range(3)]
        for protocol, _ in sockets:
            assert Outbox(protocol).send_shared(shared)
        reference, reference_transport = open_websocket()
        reference.sendMessage(text.encode(), False)
        expected = reference_transport.value()
        assert [transport.value() for _, transport in sockets] == [expected] * 3
        assert shared.prepared is shared.prepared, "framed once, however many send it"


def test_a_socket_that_is_not_open_sends_through_asgi() -> None:
    protocol, transport = open_websocket()
    outbox = Outbox(protocol)
    protocol.sendClose(1000)
    transport.clear()
    assert not outbox.send_shared(SharedText('{"type": "events"}'))
    assert transport.value() == b""


def test_without_daphne_there_is_no_shortcut() -> None:
    # A test communicator or uvicorn: no protocol to write to.
    assert not Outbox().send_shared(SharedText('{"type": "events"}'))
