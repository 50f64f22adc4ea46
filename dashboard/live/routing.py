"""The live socket's route, for a Channels ``URLRouter``: dashboard.asgi's, or a project's.

A project adds it to its own router, inside Channels' ``AuthMiddlewareStack``
(the socket needs the session's user)::

    URLRouter([*dashboard.live.routing.websocket_urlpatterns(), ...])

The socket's path is the one the app's HTTP URLs name ``dashboard:live``
(``ws/live/`` under wherever the project includes ``dashboard.urls``): the
pages reverse that name and the route is built from it, so both follow the
prefix. Build the route after Django is set up (in asgi.py, after
``get_asgi_application()``), as it reads the project's URLs.

The route carries what the socket needs whatever the project wraps around it:
the same-origin check (dashboard.live.origin) and the bounded outbox
(dashboard.live.outbox).
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
