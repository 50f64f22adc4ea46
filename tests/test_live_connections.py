"""The live socket with two Redis servers (dashboard.core.connections): a queue
of the same name on each is two subscriptions, each fed by its own server's
readers (dashboard.live.hub: one hub per connection)."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

import pytest
from channels.testing import WebsocketCommunicator
from redis import Redis

from dashboard.live.hub import READER_CLIENT_NAME, close_hubs, get_hub
from queues.keys import QueueKeys
from tests.test_live_consumer import viewer_socket

pytestmark = pytest.mark.django_db(transaction=True)

KEYS = QueueKeys("emails")
ON_DEFAULT = "bull:emails"
ON_STAGING = "staging bull:emails"


@pytest.fixture
async def servers(
    dashboard_redis: Redis, staging_redis: Redis
) -> AsyncIterator[tuple[Redis, Redis]]:
    """``emails`` exists on both servers; every hub this test's loop started closes with it."""
    for client in (dashboard_redis, staging_redis):
        client.set(KEYS.id, 0)
    yield dashboard_redis, staging_redis
    await close_hubs()


def add_event(redis: Redis, job_id: str) -> str:
    return redis.xadd(KEYS.events, {"event": "added", "jobId": job_id}).decode()  # type: ignore[union-attr]


async def subscribed(communicator: WebsocketCommunicator, *queues: str) -> list[dict[str, Any]]:
    await communicator.send_json_to(
        {"type": "subscribe", "queues": [{"queue": queue} for queue in queues]}
    )
    return [await communicator.receive_json_from(timeout=5) for _ in queues]


async def test_an_event_on_the_second_server_reaches_the_page_of_its_queue_only(
    servers: tuple[Redis, Redis],
) -> None:
    default, staging = servers
    communicator = await viewer_socket()
    replies = await subscribed(communicator, ON_DEFAULT, ON_STAGING)
    assert sorted((r["type"], r["queue"]) for r in replies) == [
        ("subscribed", ON_DEFAULT),
        ("subscribed", ON_STAGING),
    ]
    on_staging = add_event(staging, "s1")
    message = await communicator.receive_json_from(timeout=5)
    assert (message["queue"], [e["job_id"] for e in message["events"]]) == (ON_STAGING, ["s1"])
    assert message["events"][0]["id"] == on_staging
    add_event(default, "d1")
    message = await communicator.receive_json_from(timeout=5)
    assert (message["queue"], [e["job_id"] for e in message["events"]]) == (ON_DEFAULT, ["d1"])
    await communicator.disconnect()
    # Everything the socket held on either server is let go.
    assert get_hub().streams == {}
    assert get_hub("staging").streams == {}


async def test_each_server_is_read_by_readers_of_its_own(servers: tuple[Redis, Redis]) -> None:
    default, staging = servers
    communicator = await viewer_socket()
    await subscribed(communicator, ON_STAGING)
    assert list(get_hub("staging").streams) == [ON_STAGING]
    assert get_hub().streams == {}
    assert len(get_hub("staging").readers) == 1
    assert get_hub().readers == []

    def readers_on(client: Redis) -> int:
        names = [c.get("name") for c in client.client_list()]
        return names.count(READER_CLIENT_NAME)

    # The reader's connection is to the second server (once its first read is sent).
    for _ in range(50):
        if readers_on(staging):
            break
        await asyncio.sleep(0.1)
    assert (readers_on(staging), readers_on(default)) == (1, 0)
    await communicator.disconnect()


async def test_a_queue_on_a_connection_not_configured_is_refused(
    servers: tuple[Redis, Redis],
) -> None:
    communicator = await viewer_socket()
    (reply,) = await subscribed(communicator, "nope bull:emails")
    assert reply == {"type": "error", "queue": "nope bull:emails", "message": "unknown queue"}
    await communicator.disconnect()


async def test_the_overview_hears_of_every_connections_queues(
    servers: tuple[Redis, Redis],
) -> None:
    communicator = await viewer_socket()
    await communicator.send_json_to({"type": "discover"})
    message = await communicator.receive_json_from(timeout=10)
    assert message == {"type": "queues", "queues": [ON_DEFAULT, ON_STAGING]}
    await communicator.disconnect()
