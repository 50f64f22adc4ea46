"""The in-process fan-out (dashboard.live.hub to the sockets) against a real Redis:
a reader hands each batch to every socket of its process; one socket's slowness
stays its own; what a socket leaves waiting is bounded; a frame is encoded once
per kind of subscription."""

from __future__ import annotations

import asyncio
import contextlib
import json
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

import pytest
from channels.testing import WebsocketCommunicator
from django.contrib.auth.models import Permission, User
from redis import Redis

from dashboard.live import consumer as consumer_module
from dashboard.live.consumer import LiveConsumer
from dashboard.live.hub import get_hub
from dashboard.live.outbox import Outbox
from queues.keys import QueueKeys
from tests.test_live_consumer import received_ids
from tests.test_live_shared_frames import open_websocket

pytestmark = pytest.mark.django_db(transaction=True)

QUEUE = "bull:fanout"
STREAM = QueueKeys("fanout").events
Send = Callable[[dict[str, Any]], Awaitable[None]]


@pytest.fixture
async def hub(redis_client: Redis, monkeypatch: pytest.MonkeyPatch) -> AsyncIterator[None]:
    redis_client.set(QueueKeys("fanout").id, 0)  # the queue exists
    # Batches that wait in a held socket's inbox are sent, not counted as late
    # (on a loaded machine these tests can take longer than BEHIND_S).
    monkeypatch.setattr(consumer_module, "BEHIND_S", 60.0)
    yield
    await get_hub().close()


@pytest.fixture
async def viewer() -> User:
    def make() -> User:
        user = User.objects.create_user("ann", password="pw", is_staff=True)
        user.user_permissions.add(Permission.objects.get(codename="view_queues"))
        return user

    return await asyncio.to_thread(make)


async def open_socket(
    user: User, *, wrap_send: Callable[[Send], Send] | None = None, **options: Any
) -> WebsocketCommunicator:
    """A viewer's socket subscribed to QUEUE from now; ``wrap_send`` stands for the
    server's send (one that waits, as under a server with backpressure)."""
    app = LiveConsumer.as_asgi()

    async def served(scope: dict[str, Any], receive: Any, send: Send) -> None:
        await app(scope, receive, wrap_send(send) if wrap_send else send)

    communicator = WebsocketCommunicator(served, "/ws/live/")
    communicator.scope["user"] = user
    connected, _ = await communicator.connect()
    assert connected
    await communicator.send_json_to(
        {"type": "subscribe", "queues": [{"queue": QUEUE, "last_id": None, **options}]}
    )
    assert (await communicator.receive_json_from(timeout=5))["type"] == "subscribed"
    return communicator


def add_event(redis: Redis, job_id: str) -> str:
    return redis.xadd(STREAM, {"event": "added", "jobId": job_id}).decode()  # type: ignore[union-attr]


def held_send(gate: asyncio.Event) -> Callable[[Send], Send]:
    """A server send that, once the socket is subscribed, waits for ``gate`` on every
    events message: a client that does not read, under a server that makes send wait."""

    def wrap(send: Send) -> Send:
        async def waiting(message: dict[str, Any]) -> None:
            sends = message.get("type") == "websocket.send"
            if sends and json.loads(message["text"]).get("type") == "events":
                await gate.wait()
            await send(message)

        return waiting

    return wrap


@pytest.mark.usefixtures("hub")
async def test_a_socket_whose_send_waits_does_not_delay_the_others(
    redis_client: Redis, viewer: User
) -> None:
    gate = asyncio.Event()
    stuck = await open_socket(viewer, wrap_send=held_send(gate))
    others = [await open_socket(viewer) for _ in range(3)]
    sent: list[str] = []
    for n in range(10):  # ten batches, each waited on by the stuck socket
        sent.append(add_event(redis_client, str(n)))
        started = time.monotonic()
        for other in others:
            assert await received_ids(other, 1) == [sent[-1]]
        assert time.monotonic() - started < 1.0
    assert await stuck.receive_nothing(timeout=0.1)
    gate.set()  # the client reads again: it gets everything, in order
    assert await received_ids(stuck, 10) == sent
    for communicator in (stuck, *others):
        await communicator.disconnect()


@pytest.mark.usefixtures("hub")
async def test_what_a_socket_leaves_waiting_is_bounded_and_it_is_told_with_a_gap(
    redis_client: Redis, viewer: User, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Past the inbox's bound a queue's batches are dropped for that socket, which
    then gets one gap (from the newest it missed) and the live feed after it; the
    socket that reads misses nothing."""
    monkeypatch.setattr(consumer_module, "INBOX_MESSAGES", 5)
    gate = asyncio.Event()
    stuck = await open_socket(viewer, wrap_send=held_send(gate))
    (stuck_subscription,) = get_hub().streams[QUEUE].subscribers
    stuck_inbox = stuck_subscription.socket.inbox  # type: ignore[attr-defined]
    reader = await open_socket(viewer)
    sent = []
    for n in range(30):  # thirty batches: the reader's window keeps them apart
        sent.append(add_event(redis_client, str(n)))
        assert await received_ids(reader, 1) == [sent[-1]]
        # The first batch is held in send; behind it at most the bound plus one gap.
        assert stuck_inbox.qsize() <= 5 + 1
    assert stuck_inbox.qsize() == 5 + 1
    gate.set()
    ids: list[str] = []
    gap = None
    while gap is None:
        message = await stuck.receive_json_from(timeout=5)
        if message["type"] == "gap":
            gap = message["last_id"]
        else:
            ids.extend(e["id"] for e in message["events"])
    assert ids == sent[:6], "the batch in send and the five the inbox held"
    assert gap == sent[-1], "the gap continues from the newest batch it missed"
    live = add_event(redis_client, "after")
    assert await received_ids(stuck, 1) == [live]
    assert await received_ids(reader, 1) == [live]
    await stuck.disconnect()
    await reader.disconnect()


@pytest.mark.usefixtures("hub")
async def test_a_socket_that_leaves_with_batches_waiting_lets_go_and_the_others_go_on(
    redis_client: Redis, viewer: User
) -> None:
    gate = asyncio.Event()
    leaving = await open_socket(viewer, wrap_send=held_send(gate))
    staying = await open_socket(viewer)
    sent = [add_event(redis_client, str(n)) for n in range(3)]
    assert await received_ids(staying, 3) == sent
    # Cut off while its send waits and more batches wait behind it (daphne's cancel).
    more = add_event(redis_client, "3")
    assert await received_ids(staying, 1) == [more]
    leaving.future.cancel()
    with contextlib.suppress(asyncio.CancelledError):
        await leaving.future
    assert len(get_hub().streams[QUEUE].subscribers) == 1
    after = [add_event(redis_client, str(n)) for n in range(4, 8)]
    assert await received_ids(staying, 4) == after
    await staying.disconnect()
    assert get_hub().streams == {}
    assert get_hub().readers == []


@pytest.mark.usefixtures("hub")
async def test_a_subscriber_released_while_a_batch_is_handed_out_gets_no_more_and_breaks_nothing(
    redis_client: Redis,
) -> None:
    """A delivery may make another subscription of the same stream go (a socket that
    ends while the stream hands out): the hand-out goes on to the rest."""
    hub = get_hub()
    got: dict[str, list[str]] = {"a": [], "b": [], "c": []}

    class Releasing:
        bodies = True

        def __init__(self, name: str) -> None:
            self.name = name

        def deliver(self, message: dict[str, Any]) -> None:
            got[self.name].append(message["tip"])
            if self.name in ("a", "b"):  # whichever comes first lets the others' 'c' go
                hub.release(QUEUE, c)

    a, b, c = Releasing("a"), Releasing("b"), Releasing("c")
    for subscriber in (a, b, c):
        await hub.acquire(QUEUE, subscriber)
    first = add_event(redis_client, "1")
    deadline = time.monotonic() + 5
    while not (got["a"] and got["b"]) and time.monotonic() < deadline:
        await asyncio.sleep(0.02)
    assert got["a"] == got["b"] == [first]
    assert got["c"] in ([], [first])  # handed out before or after its release, never lost order
    second = add_event(redis_client, "2")
    while len(got["a"]) < 2 and time.monotonic() < deadline:
        await asyncio.sleep(0.02)
    assert got["a"] == got["b"] == [first, second]
    assert second not in got["c"]
    assert hub.streams[QUEUE].subscribers == {a, b}
    hub.release(QUEUE, a)
    hub.release(QUEUE, b)
    assert hub.streams == {}
    assert hub.readers == []


@pytest.mark.usefixtures("hub")
async def test_a_batch_is_encoded_once_for_all_sockets_that_want_the_same_frame(
    redis_client: Redis, viewer: User, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Six sockets on the queue, four wanting every event and two only counts: one
    batch is encoded twice (once per kind), and sockets of a kind get the same text."""
    encoded: list[str] = []
    encode = consumer_module.within_message_limit

    def counting(message: dict[str, Any]) -> str:
        encoded.append(message["type"])
        return encode(message)

    monkeypatch.setattr(consumer_module, "within_message_limit", counting)
    everything = [await open_socket(viewer) for _ in range(4)]
    counts = [await open_socket(viewer, bodies=False) for _ in range(2)]
    with redis_client.pipeline(transaction=True) as pipe:  # one batch of five
        for n in range(5):
            pipe.xadd(STREAM, {"event": "added", "jobId": str(n)})
        ids = [i.decode() for i in pipe.execute()]
    texts = [(await c.receive_output(timeout=5))["text"] for c in everything]
    count_texts = [(await c.receive_output(timeout=5))["text"] for c in counts]
    assert [e["id"] for e in json.loads(texts[0])["events"]] == ids
    assert len(set(texts)) == 1
    assert len(set(count_texts)) == 1
    assert json.loads(count_texts[0])["count"] == 5
    assert encoded == ["events", "events"], "one encoding per kind of subscription"
    for communicator in (*everything, *counts):
        await communicator.disconnect()


def frames_in(data: bytes) -> list[dict[str, Any]]:
    """The messages of the unmasked text frames a server wrote, in order."""
    messages, at = [], 0
    while at < len(data):
        assert data[at] == 0x81, "one whole text frame"
        length, at = data[at + 1] & 0x7F, at + 2
        if length >= 126:
            width = 2 if length == 126 else 8
            length, at = int.from_bytes(data[at : at + width], "big"), at + width
        messages.append(json.loads(data[at : at + length]))
        at += length
    return messages


@pytest.mark.usefixtures("hub")
async def test_under_daphne_the_hand_out_writes_batches_straight_to_an_idle_socket(
    redis_client: Redis, viewer: User, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A socket on autobahn's protocol (daphne's) whose task waits with nothing
    queued gets each batch written by the reader's hand-out itself, without a
    wake-up of its task: every event, in order, and the position moves with them."""
    handled: list[str] = []
    live_events = LiveConsumer.live_events

    async def counted(self: LiveConsumer, message: dict[str, Any]) -> None:
        handled.append(message["tip"])
        await live_events(self, message)

    monkeypatch.setattr(LiveConsumer, "live_events", counted)
    protocol, transport = open_websocket()
    communicator = WebsocketCommunicator(LiveConsumer.as_asgi(), "/ws/live/")
    communicator.scope["user"] = viewer
    communicator.scope["outbox"] = Outbox(protocol)
    connected, _ = await communicator.connect()
    assert connected
    await communicator.send_json_to(
        {"type": "subscribe", "queues": [{"queue": QUEUE, "last_id": None}]}
    )
    assert (await communicator.receive_json_from(timeout=5))["type"] == "subscribed"
    sent = []
    for n in range(20):
        sent.append(add_event(redis_client, str(n)))
        if n % 5 == 4:
            await asyncio.sleep(0.05)  # several batches
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline:
        messages = frames_in(transport.value())
        if [e["id"] for m in messages for e in m["events"]] == sent:
            break
        await asyncio.sleep(0.02)
    assert [e["id"] for m in messages for e in m["events"]] == sent
    assert messages[-1]["last_id"] == sent[-1]
    assert len(messages) > 1
    assert handled == [], "no batch went through the socket's task"
    await communicator.disconnect()
