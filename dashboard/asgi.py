"""ASGI entry point (daphne, uvicorn, runserver): HTTP to Django, WebSockets to the live consumer.

The application serves its static files itself, so one process needs nothing
in front. The WebSocket side is what a project writes too: Channels' auth
stack around a router holding the app's route (dashboard.live.routing).
"""

from __future__ import annotations

import os

from django.core.asgi import get_asgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "dashboard.settings")

# Django must be set up before anything imports models (the auth middleware does).
get_asgi_application()

from channels.auth import AuthMiddlewareStack  # noqa: E402
from channels.routing import ProtocolTypeRouter, URLRouter  # noqa: E402

from dashboard.history import collector  # noqa: E402
from dashboard.live.routing import websocket_urlpatterns  # noqa: E402
from dashboard.site.http import ThreadedDjangoHTTP, leave_bodies_to_the_application  # noqa: E402

# Every body reaches Django, so a malformed one is answered as the app answers.
leave_bodies_to_the_application()

application = ProtocolTypeRouter(
    {
        # Views are synchronous: each request (static files too) runs in one pool
        # thread (dashboard.site.http), not hopping threads per middleware as under
        # Django's ASGI handler.
        "http": ThreadedDjangoHTTP(),
        "websocket": AuthMiddlewareStack(URLRouter(websocket_urlpatterns())),
    }
)

# The metrics history: one collector among all server processes (dashboard.history.collector).
collector.start()
