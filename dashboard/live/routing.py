"""The live socket's route for a Channels ``URLRouter`` inside its
``AuthMiddlewareStack``, reversed from ``dashboard:live`` (so built after Django
is set up), carrying its Origin check whatever wraps it.
"""

from __future__ import annotations

import io
import re
from typing import Any
from urllib.parse import unquote

from channels.security.websocket import WebsocketDenier
from django.core.exceptions import DisallowedHost
from django.core.handlers.asgi import ASGIRequest
from django.http import HttpResponse
from django.middleware.csrf import CsrfViewMiddleware
from django.urls import URLPattern, get_script_prefix, re_path, reverse

from dashboard.live.consumer import LiveConsumer


def origin_allowed(scope: dict[str, Any]) -> bool:
    """Any site can open a socket with the user's cookies, so Django's CSRF origin
    test decides, as for a POST (Channels' ``AllowedHostsOriginValidator`` let in
    another port of the same host)."""
    scheme = "https" if scope.get("scheme") == "wss" else "http"  # a page on https opens wss
    request = ASGIRequest(dict(scope, type="http", method="GET", scheme=scheme), io.BytesIO())
    if "HTTP_ORIGIN" not in request.META:
        return False  # every browser sends one; a socket without it is no page's
    try:
        request.get_host()
    except DisallowedHost:
        return False
    # The CSRF check's own origin test (private, so a Django upgrade that
    # changes it fails tests/test_live_origin.py rather than passing silently).
    check: Any = CsrfViewMiddleware(lambda request: HttpResponse())
    return bool(check._origin_verified(request))


class SameOriginOnly:
    """Refuses a WebSocket handshake from a foreign origin (HTTP 403, before any consumer)."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> Any:
        if scope["type"] == "websocket" and not origin_allowed(scope):
            return await WebsocketDenier()(scope, receive, send)
        return await self.inner(scope, receive, send)


def live_socket_path() -> str:
    """The socket's path as a router sees it: no script prefix, no leading '/', decoded."""
    url = reverse("dashboard:live")
    return unquote(url[len(get_script_prefix()) :])


def websocket_urlpatterns() -> list[URLPattern]:
    socket = SameOriginOnly(LiveConsumer.as_asgi())
    return [re_path(f"^{re.escape(live_socket_path())}$", socket, name="live")]
