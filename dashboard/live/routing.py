"""The live socket's route for a Channels ``URLRouter`` inside its
``AuthMiddlewareStack``, reversed from ``dashboard:live`` (so built after Django
is set up), carrying the origin check and the outbox whatever wraps it.
"""

from __future__ import annotations

import re
from urllib.parse import unquote

from django.urls import URLPattern, get_script_prefix, re_path, reverse

from dashboard.live.consumer import LiveConsumer
from dashboard.live.origin import SameOriginOnly
from dashboard.live.outbox import SocketOutbox


def live_socket_path() -> str:
    """The socket's path as a router sees it: no script prefix, no leading '/', decoded."""
    url = reverse("dashboard:live")
    return unquote(url[len(get_script_prefix()) :])


def websocket_urlpatterns() -> list[URLPattern]:
    socket = SameOriginOnly(SocketOutbox(LiveConsumer.as_asgi()))
    return [re_path(f"^{re.escape(live_socket_path())}$", socket, name="live")]
