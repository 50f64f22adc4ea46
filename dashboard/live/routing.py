"""WebSocket routes (mounted by dashboard.asgi)."""

from __future__ import annotations

from django.urls import path

from dashboard.live.consumer import LiveConsumer

websocket_urlpatterns = [
    path("ws/live/", LiveConsumer.as_asgi()),
]
