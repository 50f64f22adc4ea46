"""WebSocket routes (mounted by dashboard.asgi)."""

from __future__ import annotations

from django.urls import path

from dashboard.live.consumer import LiveConsumer

websocket_urlpatterns = [
    path("ws/live/", LiveConsumer.as_asgi(), name="live"),
]
# So that pages can reverse the socket's URL: reverse("live", urlconf=__name__).
urlpatterns = websocket_urlpatterns
