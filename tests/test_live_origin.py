"""The live socket's Origin check (dashboard.live.routing): the page's own origin, port
included, or one of CSRF_TRUSTED_ORIGINS; anything else is refused at the handshake."""

from __future__ import annotations

from typing import Any

import pytest
from channels.testing import WebsocketCommunicator

from dashboard.asgi import application
from dashboard.live.hub import get_hub

pytestmark = pytest.mark.django_db(transaction=True)


async def handshake(host: str, origin: str | None, scheme: str = "ws", **extra: str) -> bool:
    """Whether the socket is accepted (anonymous: the consumer then closes it with 4401)."""
    headers = [(b"host", host.encode())]
    if origin is not None:
        headers.append((b"origin", origin.encode()))
    headers += [(name.encode(), value.encode()) for name, value in extra.items()]
    communicator = WebsocketCommunicator(application, "/ws/live/", headers=headers)
    communicator.scope["scheme"] = scheme
    connected, _ = await communicator.connect()
    await communicator.disconnect()
    await get_hub().close()
    return bool(connected)


@pytest.fixture
def hosts(settings: Any) -> None:
    # Channels' validator read ALLOWED_HOSTS once, at import: these hosts are in
    # the default settings, so the tests say the same to it as to ours.
    settings.ALLOWED_HOSTS = ["localhost", "127.0.0.1"]
    settings.CSRF_TRUSTED_ORIGINS = []


@pytest.mark.usefixtures("hosts")
async def test_the_page_own_origin_port_included_is_accepted() -> None:
    assert await handshake("localhost:8000", "http://localhost:8000")
    assert await handshake("127.0.0.1", "http://127.0.0.1")


@pytest.mark.usefixtures("hosts")
@pytest.mark.parametrize(
    ("host", "origin"),
    [
        ("localhost:8000", "http://localhost:9000"),  # same host, another port
        ("localhost:8000", "http://localhost"),  # same host, default port
        ("localhost:8000", "https://localhost:8000"),  # another scheme
        ("localhost:8000", "http://evil.example"),
        ("localhost:8000", "null"),
        ("localhost:8000", None),  # no Origin: no browser page
        ("evil.example", "http://evil.example"),  # a host we do not serve
    ],
)
async def test_any_other_origin_is_refused(host: str, origin: str | None) -> None:
    assert not await handshake(host, origin)


@pytest.mark.usefixtures("hosts")
async def test_a_proxy_origin_listed_in_csrf_trusted_origins_is_accepted(settings: Any) -> None:
    # An HTTPS proxy in front: the browser says https://dash.example.com, daphne
    # sees plain ws:// to its own address.
    assert not await handshake("127.0.0.1:8000", "https://dash.example.com")
    settings.CSRF_TRUSTED_ORIGINS = ["https://dash.example.com"]
    assert await handshake("127.0.0.1:8000", "https://dash.example.com")
    assert not await handshake("127.0.0.1:8000", "https://dash.example.com:8443")
    assert not await handshake("127.0.0.1:8000", "http://dash.example.com")


@pytest.mark.usefixtures("hosts")
async def test_a_wildcard_trusted_origin_covers_its_subdomains(settings: Any) -> None:
    settings.CSRF_TRUSTED_ORIGINS = ["https://*.example.com"]
    assert await handshake("127.0.0.1:8000", "https://ops.example.com")
    assert not await handshake("127.0.0.1:8000", "https://example.org")


@pytest.mark.usefixtures("hosts")
async def test_a_secure_socket_or_a_trusted_proxy_header_makes_the_page_origin_https(
    settings: Any,
) -> None:
    assert await handshake("localhost", "https://localhost", scheme="wss")
    assert not await handshake("localhost", "http://localhost", scheme="wss")
    forwarded = {"x-forwarded-proto": "https"}
    assert not await handshake("localhost", "https://localhost", **forwarded)
    settings.SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")
    assert await handshake("localhost", "https://localhost", **forwarded)
