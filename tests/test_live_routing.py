"""The live socket's route follows the prefix a project includes the app's URLs
under (dashboard.live.routing), and the pages are told that same path."""

from __future__ import annotations

from typing import Any

import pytest
from channels.routing import URLRouter
from channels.testing import WebsocketCommunicator
from django.test import Client
from django.urls import include, path, reverse

from dashboard.live.hub import get_hub
from dashboard.live.routing import live_socket_path, websocket_urlpatterns

# A project's URL conf (this module, in the tests below): the app under a prefix.
urlpatterns = [path("ops/queues/", include("dashboard.urls"))]


@pytest.fixture
def mounted(settings: Any) -> None:
    settings.ROOT_URLCONF = __name__


def test_the_stand_alone_site_has_the_socket_at_its_root() -> None:
    assert live_socket_path() == "ws/live/"


@pytest.mark.usefixtures("mounted")
def test_under_a_prefix_the_socket_and_every_name_follow_it() -> None:
    assert live_socket_path() == "ops/queues/ws/live/"
    assert reverse("dashboard:overview") == "/ops/queues/"
    assert reverse("dashboard:api:queues") == "/ops/queues/api/queues/"
    queue = reverse("dashboard:api:queue", args=["bull", "a/b~c"])
    assert queue == "/ops/queues/api/queues/bull/a~sb~~c/"


@pytest.mark.usefixtures("mounted")
@pytest.mark.django_db(transaction=True)
async def test_under_a_prefix_the_route_takes_the_socket_there_and_nowhere_else() -> None:
    router = URLRouter(websocket_urlpatterns())
    headers = [(b"host", b"localhost"), (b"origin", b"http://localhost")]
    mounted = WebsocketCommunicator(router, "/ops/queues/ws/live/", headers=headers)
    connected, _ = await mounted.connect()
    assert connected  # anonymous here: accepted, then closed with 4401
    assert (await mounted.receive_output())["code"] == 4401
    await mounted.disconnect()
    root = WebsocketCommunicator(router, "/ws/live/", headers=headers)
    with pytest.raises(ValueError, match="No route found"):
        await root.connect()
    await get_hub().close()


@pytest.mark.usefixtures("mounted")
@pytest.mark.django_db
def test_the_socket_path_over_plain_http_says_what_it_is() -> None:
    answer = Client().get("/ops/queues/ws/live/")
    assert answer.status_code == 400
    assert b"WebSocket" in answer.content
