"""The live WebSocket consumer against a real Redis: auth, subscribe, resume, gaps, fan-out."""

from __future__ import annotations

import asyncio
import contextlib
import json
import time
from collections.abc import AsyncIterator
from typing import Any

import pytest
from asgiref.sync import sync_to_async
from channels.testing import WebsocketCommunicator
from django.contrib.auth.models import Permission, User
from redis import Redis

from dashboard.asgi import application
from dashboard.live import consumer as consumer_module
from dashboard.live.consumer import LiveConsumer
from dashboard.live.hub import Batch, get_hub
from dashboard.shared import presenters
from queues.connection import connect
from queues.events import Event
from queues.keys import QueueKeys
from tests.outage import RestartableRedis, restartable_redis

pytestmark = pytest.mark.django_db(transaction=True)

QUEUE = "bull:emails"
STREAM = QueueKeys("emails").events


@pytest.fixture
async def hub(redis_client: Redis) -> AsyncIterator[None]:
    """The queue exists (sockets watch only queues that do); every reader and
    client this test's event loop started is closed with it."""
    redis_client.set(QueueKeys("emails").id, 0)
    yield
    await get_hub().close()


def make_user(*, staff: bool = True, view: bool = True, name: str = "ann") -> User:
    user = User.objects.create_user(name, password="pw", is_staff=staff)
    if view:
        user.user_permissions.add(Permission.objects.get(codename="view_queues"))
    return user


async def connect_as(user: Any) -> WebsocketCommunicator:
    communicator = WebsocketCommunicator(LiveConsumer.as_asgi(), "/ws/live/")
    communicator.scope["user"] = user
    connected, _ = await communicator.connect()
    assert connected
    return communicator


async def viewer_socket() -> WebsocketCommunicator:
    user = await asyncio.to_thread(make_user)
    return await connect_as(user)


async def subscribe(
    communicator: WebsocketCommunicator,
    last_id: str | None = None,
    queue: str = QUEUE,
    **options: Any,
) -> dict[str, Any]:
    """Subscribe to one queue (``options``: the page's filter, e.g. job= or bodies=)."""
    await communicator.send_json_to(
        {"type": "subscribe", "queues": [{"queue": queue, "last_id": last_id, **options}]}
    )
    reply: dict[str, Any] = await communicator.receive_json_from(timeout=5)
    return reply


async def received_ids(communicator: WebsocketCommunicator, count: int) -> list[str]:
    ids: list[str] = []
    while len(ids) < count:
        message = await communicator.receive_json_from(timeout=5)
        assert message["type"] == "events", message
        ids.extend(event["id"] for event in message["events"])
    return ids


async def assert_gap_then_live(
    communicator: WebsocketCommunicator, redis: Redis, reply: dict[str, Any]
) -> None:
    """A gap that moves the page to the newest entry, then the live feed from there."""
    newest = redis.xrevrange(STREAM, count=1)[0][0].decode()
    assert reply == {"type": "gap", "queue": QUEUE, "last_id": newest}
    live = add_event(redis, "after-the-gap")
    assert await received_ids(communicator, 1) == [live]
    await communicator.disconnect()


def add_event(redis: Redis, job_id: str, name: str = "added", **fields: str) -> str:
    entry = {"event": name, "jobId": job_id, **fields}
    return redis.xadd(STREAM, entry).decode()  # type: ignore[arg-type, union-attr]


@pytest.mark.usefixtures("hub")
async def test_anonymous_socket_is_closed_with_4401() -> None:
    from django.contrib.auth.models import AnonymousUser

    communicator = await connect_as(AnonymousUser())
    assert await communicator.receive_output(timeout=5) == {"type": "websocket.close", "code": 4401}


@pytest.mark.usefixtures("hub")
async def test_user_without_view_permission_is_closed_with_4403() -> None:
    user = await asyncio.to_thread(make_user, view=False)
    communicator = await connect_as(user)
    assert await communicator.receive_output(timeout=5) == {"type": "websocket.close", "code": 4403}


@pytest.mark.usefixtures("hub")
async def test_one_user_holds_at_most_its_share_of_live_sockets() -> None:
    """A script signed in as one user, opening sockets in a loop: each holds an
    inbox and an outbox, so past ECHOMQ_LIVE_SOCKETS_PER_USER (30 by default)
    the next is closed with 4429, while another user still gets in and a
    closed socket frees its place."""
    from dashboard.core import conf

    looping = await asyncio.to_thread(make_user)
    colleague = await asyncio.to_thread(make_user, name="bob")
    sockets = [await connect_as(looping) for _ in range(conf.live_sockets_per_user())]
    assert all([await s.receive_nothing(timeout=0.05) for s in sockets[:3]])
    refused = await connect_as(looping)
    assert await refused.receive_output(timeout=5) == {"type": "websocket.close", "code": 4429}
    other = await connect_as(colleague)
    assert await other.receive_nothing(timeout=0.1)
    await sockets.pop().disconnect()
    again = await connect_as(looping)
    assert await again.receive_nothing(timeout=0.1)
    for communicator in [*sockets, again, other]:
        await communicator.disconnect()
    assert consumer_module._sockets_of == {}


@pytest.mark.usefixtures("hub")
async def test_foreign_origin_is_refused_before_the_consumer() -> None:
    communicator = WebsocketCommunicator(
        application,
        "/ws/live/",
        headers=[(b"origin", b"https://evil.example"), (b"host", b"localhost")],
    )
    connected, _ = await communicator.connect()
    assert not connected


@pytest.mark.usefixtures("hub")
async def test_subscribe_from_now_then_receive_each_xadd(redis_client: Redis) -> None:
    old = add_event(redis_client, "1")
    communicator = await viewer_socket()
    assert await subscribe(communicator) == {"type": "subscribed", "queue": QUEUE, "last_id": old}
    new = add_event(redis_client, "2", "completed", returnvalue="42")
    message = await communicator.receive_json_from(timeout=5)
    assert message["type"] == "events"
    assert message["refresh"] is False
    # What the Events tab's own rows show (one presenter: presenters.event_row).
    row = presenters.event_row(
        Event(new, "completed", "2", {"returnvalue": "42"}), "/queues/bull/emails/job/"
    )
    assert message["events"] == [{"id": new, "event": "completed", "job_id": "2", "row": row}]
    assert row["job_url"] == "/queues/bull/emails/job/2"
    assert row["tone"] == "completed"
    await communicator.disconnect()


@pytest.mark.usefixtures("hub")
async def test_live_events_do_not_wait_for_the_database_thread(redis_client: Redis) -> None:
    """Channels' own dispatch first sends every message through its one thread
    for synchronous code (to close stale database connections). Then a slow
    query anywhere in the process would hold up every live feed, and with tens
    of messages a second per page that queue was a third of the server's work.
    Events must arrive while that thread is busy."""
    communicator = await viewer_socket()
    await subscribe(communicator)
    busy = asyncio.ensure_future(sync_to_async(time.sleep)(3))
    await asyncio.sleep(0.1)
    sent = [add_event(redis_client, str(n)) for n in range(5)]
    started = time.monotonic()
    assert await received_ids(communicator, 5) == sent
    assert time.monotonic() - started < 1.5
    await busy
    await communicator.disconnect()


@pytest.mark.usefixtures("hub")
async def test_resume_replays_what_was_missed_then_goes_live(redis_client: Redis) -> None:
    seen = add_event(redis_client, "1")
    missed = [add_event(redis_client, str(n)) for n in (2, 3)]
    communicator = await viewer_socket()
    assert (await subscribe(communicator, seen))["type"] == "subscribed"
    assert await received_ids(communicator, 2) == missed
    live = add_event(redis_client, "4")
    assert await received_ids(communicator, 1) == [live]
    await communicator.disconnect()


@pytest.mark.usefixtures("hub")
async def test_trimmed_id_gives_a_gap_and_the_new_position(redis_client: Redis) -> None:
    first = add_event(redis_client, "1")
    for n in range(2, 6):
        redis_client.xadd(STREAM, {"event": "added", "jobId": str(n)}, maxlen=2, approximate=False)
    communicator = await viewer_socket()
    await assert_gap_then_live(communicator, redis_client, await subscribe(communicator, first))


@pytest.mark.usefixtures("hub")
async def test_no_event_lost_or_doubled_while_subscribing_under_load(redis_client: Redis) -> None:
    start = add_event(redis_client, "0")

    def produce() -> list[str]:
        ids = []
        for n in range(1, 301):
            ids.append(add_event(redis_client, str(n)))
            time.sleep(0.001)  # a steady stream that the subscription lands in the middle of
        return ids

    communicator = await viewer_socket()
    producing = asyncio.ensure_future(asyncio.to_thread(produce))
    await asyncio.sleep(0.05)
    assert (await subscribe(communicator, start))["type"] == "subscribed"
    produced = await producing
    ids: list[str] = []
    while not ids or ids[-1] != produced[-1]:
        message = await communicator.receive_json_from(timeout=5)
        ids.extend(event["id"] for event in message["events"])
    assert ids == produced
    await communicator.disconnect()


@pytest.mark.usefixtures("hub")
async def test_one_reader_per_queue_shared_and_stopped_with_the_last_subscriber(
    redis_client: Redis,
) -> None:
    first, second = (
        await viewer_socket(),
        await connect_as(await asyncio.to_thread(User.objects.get)),
    )
    await subscribe(first)
    await subscribe(second)
    assert list(get_hub().streams) == [QUEUE]
    assert len(get_hub().streams[QUEUE].subscribers) == 2
    event = add_event(redis_client, "1")
    assert await received_ids(first, 1) == [event]
    assert await received_ids(second, 1) == [event]
    await first.disconnect()
    assert len(get_hub().streams[QUEUE].subscribers) == 1
    await second.disconnect()
    assert get_hub().streams == {}
    assert get_hub().readers == []


@pytest.mark.usefixtures("hub")
async def test_a_large_backlog_is_sent_with_a_refresh_hint(redis_client: Redis) -> None:
    for n in range(300):
        add_event(redis_client, str(n))
    communicator = await viewer_socket()
    assert (await subscribe(communicator, "0-0"))["type"] == "subscribed"
    message = await communicator.receive_json_from(timeout=5)
    assert len(message["events"]) == 300
    assert message["refresh"] is True
    await communicator.disconnect()


@pytest.mark.usefixtures("hub")
async def test_unknown_prefix_and_bad_names_are_refused(redis_client: Redis) -> None:
    communicator = await viewer_socket()
    for queue in ("secret:emails", "bull:", "bull:a b"):
        reply = await subscribe(communicator, queue=queue)
        assert reply["type"] == "error"
    assert get_hub().streams == {}
    await communicator.send_json_to({"type": "dance"})
    assert await communicator.receive_output(timeout=5) == {"type": "websocket.close", "code": 4400}


@pytest.mark.usefixtures("hub")
@pytest.mark.parametrize(
    "frame",
    [
        "not json",
        '{"type": "subscribe", "queues": "bull:emails"}',
        '{"type": "subscribe", "queues": [' + ",".join(["{}"] * 501) + "]}",
    ],
)
async def test_malformed_messages_close_with_4400(frame: str) -> None:
    communicator = await viewer_socket()
    await communicator.send_to(text_data=frame)
    assert await communicator.receive_output(timeout=5) == {"type": "websocket.close", "code": 4400}


@pytest.mark.usefixtures("hub")
async def test_a_socket_that_falls_behind_gets_a_refresh_hint_not_the_backlog(
    redis_client: Redis,
) -> None:
    communicator = await viewer_socket()
    tip = (await subscribe(communicator))["last_id"]
    ms = int(tip.split("-")[0])
    stale = [
        {"id": f"{ms + n}-0", "event": "added", "job_id": str(n), "row": None} for n in range(1, 4)
    ]
    # What the reader hands out, as if it had waited in the inbox for 5 seconds.
    get_hub().streams[QUEUE].fan_out(Batch(QUEUE, stale, time.monotonic() - 5).message())
    hint = await communicator.receive_json_from(timeout=5)
    assert hint == {
        "type": "events",
        "queue": QUEUE,
        "events": [],
        "last_id": stale[-1]["id"],
        "skipped": 3,
        "refresh": True,
    }
    await communicator.disconnect()


@pytest.mark.usefixtures("hub")
async def test_a_burst_that_trims_unread_events_gives_a_gap(redis_client: Redis) -> None:
    communicator = await viewer_socket()
    await subscribe(communicator)
    seen = add_event(redis_client, "1")
    assert await received_ids(communicator, 1) == [seen]
    # One script-sized burst: 300 events, the stream capped at 150 before the reader reads.
    with redis_client.pipeline(transaction=True) as pipe:
        for n in range(300):
            pipe.xadd(STREAM, {"event": "waiting", "jobId": str(n)}, maxlen=150, approximate=False)
        pipe.execute()
    await assert_gap_then_live(communicator, redis_client, await communicator.receive_json_from(5))


@pytest.mark.usefixtures("hub")
async def test_unsubscribe_stops_the_feed_and_the_reader(redis_client: Redis) -> None:
    communicator = await viewer_socket()
    await subscribe(communicator)
    await communicator.send_json_to({"type": "unsubscribe", "queues": [QUEUE]})
    add_event(redis_client, "1")
    assert await communicator.receive_nothing(timeout=0.5)
    assert get_hub().streams == {}
    assert get_hub().readers == []
    await communicator.disconnect()


async def logged_in_socket(user: User) -> tuple[WebsocketCommunicator, str]:
    """A socket with the user and a real session (as AuthMiddlewareStack gives), and its key."""
    from importlib import import_module

    from django.conf import settings
    from django.test import Client

    def log_in() -> str:
        client = Client()
        client.force_login(user)
        return str(client.session.session_key)

    key = await asyncio.to_thread(log_in)
    communicator = WebsocketCommunicator(LiveConsumer.as_asgi(), "/ws/live/")
    communicator.scope["user"] = user
    communicator.scope["session"] = import_module(settings.SESSION_ENGINE).SessionStore(key)
    connected, _ = await communicator.connect()
    assert connected
    return communicator, key


async def subscribed_with_quick_rechecks(
    monkeypatch: pytest.MonkeyPatch,
) -> tuple[WebsocketCommunicator, User]:
    """A viewer's logged-in socket, subscribed, its access re-checked every 50 ms."""
    monkeypatch.setattr(consumer_module, "RECHECK_S", 0.05)
    user = await asyncio.to_thread(make_user)
    communicator, _ = await logged_in_socket(user)
    await subscribe(communicator)
    return communicator, user


@pytest.mark.usefixtures("hub")
async def test_a_socket_whose_user_keeps_access_stays_open_across_rechecks(
    redis_client: Redis, monkeypatch: pytest.MonkeyPatch
) -> None:
    communicator, _ = await subscribed_with_quick_rechecks(monkeypatch)
    await asyncio.sleep(0.5)  # ten rechecks
    live = add_event(redis_client, "still-here")
    assert await received_ids(communicator, 1) == [live]
    await communicator.disconnect()


@pytest.mark.usefixtures("hub")
async def test_revoking_the_view_permission_closes_an_open_socket_with_4403(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from dashboard.core import short_cache

    # A recheck racing the removal could cache the old answer for its 10 s TTL.
    monkeypatch.setattr(short_cache, "TTL_S", 0.0)
    communicator, user = await subscribed_with_quick_rechecks(monkeypatch)
    view = await asyncio.to_thread(Permission.objects.get, codename="view_queues")
    await asyncio.to_thread(user.user_permissions.remove, view)
    assert await communicator.receive_output(timeout=5) == {"type": "websocket.close", "code": 4403}


@pytest.mark.usefixtures("hub")
async def test_a_password_change_elsewhere_closes_an_open_socket_with_4401(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    communicator, user = await subscribed_with_quick_rechecks(monkeypatch)

    def reset_password() -> None:  # what an admin does to a leaked account
        fresh = User.objects.get(pk=user.pk)
        fresh.set_password("a-new-password")
        fresh.save()

    await asyncio.to_thread(reset_password)
    assert await communicator.receive_output(timeout=5) == {"type": "websocket.close", "code": 4401}


@pytest.mark.usefixtures("hub")
async def test_an_expired_session_closes_an_open_socket_with_4401(
    monkeypatch: pytest.MonkeyPatch, settings: Any
) -> None:
    """The session is read again at each recheck: the copy the socket loaded
    when it connected would stay valid for as long as the socket is open."""
    monkeypatch.setattr(consumer_module, "RECHECK_S", 0.05)
    settings.SESSION_COOKIE_AGE = 2  # the session this socket logs in with lasts 2 s
    communicator, _ = await logged_in_socket(await asyncio.to_thread(make_user))
    await subscribe(communicator)
    await asyncio.sleep(0.3)
    assert await communicator.receive_nothing(timeout=0.1), "open while the session holds"
    assert await communicator.receive_output(timeout=5) == {"type": "websocket.close", "code": 4401}


@pytest.mark.usefixtures("hub")
async def test_logging_out_in_another_tab_closes_an_open_socket_with_4401(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The other tab sends the same session cookie: its logout ends the
    session this socket was opened with."""
    from django.conf import settings
    from django.test import Client

    monkeypatch.setattr(consumer_module, "RECHECK_S", 0.05)
    communicator, key = await logged_in_socket(await asyncio.to_thread(make_user))
    await subscribe(communicator)
    await asyncio.sleep(0.3)
    assert await communicator.receive_nothing(timeout=0.1), "open while the session holds"

    def log_out_in_another_tab() -> int:
        tab = Client()
        tab.cookies[settings.SESSION_COOKIE_NAME] = key
        return int(tab.post("/logout/").status_code)

    assert await asyncio.to_thread(log_out_in_another_tab) == 302
    assert await communicator.receive_output(timeout=5) == {"type": "websocket.close", "code": 4401}


@pytest.mark.usefixtures("hub")
async def test_deactivating_the_user_closes_an_open_socket_with_4401(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    communicator, user = await subscribed_with_quick_rechecks(monkeypatch)
    await asyncio.to_thread(User.objects.filter(pk=user.pk).update, is_active=False)
    assert await communicator.receive_output(timeout=5) == {"type": "websocket.close", "code": 4401}


@pytest.mark.usefixtures("hub")
async def test_discover_sends_the_queues_then_each_new_set(
    redis_client: Redis, monkeypatch: pytest.MonkeyPatch
) -> None:
    from dashboard.live import hub as watcher
    from queues import discovery

    monkeypatch.setattr(watcher, "WATCH_INTERVAL_S", 0.05)
    monkeypatch.setattr(discovery, "MIN_PASS_S", 0.05)
    discovery.clear_discovery_cache()
    add_event(redis_client, "1")
    redis_client.set(QueueKeys("emails").id, 1)  # the queue exists
    communicator = await viewer_socket()
    await communicator.send_json_to({"type": "discover"})
    assert await communicator.receive_json_from(timeout=5) == {
        "type": "queues",
        "queues": [QUEUE],
    }

    redis_client.set(QueueKeys("invoices").id, 1)  # another producer starts a queue
    assert await communicator.receive_json_from(timeout=5) == {
        "type": "queues",
        "queues": ["bull:emails", "bull:invoices"],
    }
    redis_client.delete(*redis_client.keys(b"bull:emails:*"))  # obliterated
    assert await communicator.receive_json_from(timeout=5) == {
        "type": "queues",
        "queues": ["bull:invoices"],
    }
    await communicator.disconnect()
    assert get_hub().queue_watcher is None, "the last page gone, the watcher stops"


@pytest.mark.usefixtures("hub")
async def test_a_job_filter_sends_only_that_jobs_events(redis_client: Redis) -> None:
    communicator = await viewer_socket()
    assert (await subscribe(communicator, job="2"))["type"] == "subscribed"
    add_event(redis_client, "1")
    mine = add_event(redis_client, "2", "active")
    add_event(redis_client, "3")
    also_mine = add_event(redis_client, "2", "completed")
    assert await received_ids(communicator, 2) == [mine, also_mine]
    # Nothing else came: the next message is the next event of job 2.
    add_event(redis_client, "4")
    last = add_event(redis_client, "2", "removed")
    message = await communicator.receive_json_from(timeout=5)
    assert [e["id"] for e in message["events"]] == [last]
    assert message["last_id"] == last
    await communicator.disconnect()


@pytest.mark.usefixtures("hub")
async def test_a_job_page_hears_its_position_so_a_reconnect_resumes_without_a_gap(
    redis_client: Redis, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Other jobs' events move a job page's resume position too. Told only of
    its own job's, the page would reconnect from far back, past the replay
    limit, and reload; told now and then, it resumes in place."""
    monkeypatch.setattr(consumer_module, "POSITION_EVERY_S", 0.0)
    monkeypatch.setattr(consumer_module, "REPLAY_LIMIT", 5)
    user = await asyncio.to_thread(make_user)
    communicator = await connect_as(user)
    assert (await subscribe(communicator, job="2"))["type"] == "subscribed"
    others = [add_event(redis_client, str(n)) for n in range(10, 20)]
    position = None
    while position != others[-1]:
        message = await communicator.receive_json_from(timeout=5)
        assert message["type"] == "events"
        assert message["events"] == []
        position = message["last_id"]
    await communicator.disconnect()

    again = await connect_as(user)
    assert await subscribe(again, position, job="2") == {
        "type": "subscribed",
        "queue": QUEUE,
        "last_id": others[-1],
    }
    await again.disconnect()


@pytest.mark.usefixtures("hub")
async def test_without_bodies_a_page_gets_how_many_events_and_their_names(
    redis_client: Redis,
) -> None:
    communicator = await viewer_socket()
    assert (await subscribe(communicator, bodies=False))["type"] == "subscribed"
    add_event(redis_client, "1", "progress", data="5")
    newest = add_event(redis_client, "1", "completed")
    counted, kinds, last_id = 0, set(), ""
    while counted < 2:
        message = await communicator.receive_json_from(timeout=5)
        assert message["type"] == "events"
        assert message["events"] == []
        counted += message["count"]
        kinds |= set(message["kinds"])
        last_id = message["last_id"]
    assert counted == 2
    assert kinds == {"progress", "completed"}
    assert last_id == newest
    await communicator.disconnect()


@pytest.mark.usefixtures("hub")
async def test_rows_are_rendered_only_for_a_queue_a_page_shows_the_events_of(
    redis_client: Redis, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The overview and count-only pages follow every queue without bodies: the
    reader renders no row for them, and once per event when an Events tab joins."""
    from dashboard.live import hub as streams

    rendered: list[str] = []

    def counting(event: Event, job_prefix: str) -> presenters.EventRow:
        rendered.append(event.stream_id)
        return presenters.event_row(event, job_prefix)

    monkeypatch.setattr(streams, "event_row", counting)
    user = await asyncio.to_thread(make_user)
    overview, counts = await connect_as(user), await connect_as(user)
    for socket in (overview, counts):
        assert (await subscribe(socket, bodies=False))["type"] == "subscribed"
    quiet = [add_event(redis_client, "order-7", "progress", data="40") for _ in range(3)]
    for socket in (overview, counts):
        counted = 0
        while counted < len(quiet):
            counted += (await socket.receive_json_from(timeout=5))["count"]
    assert rendered == []

    events_tab = await connect_as(user)
    assert (await subscribe(events_tab, last_id=quiet[-1]))["type"] == "subscribed"
    shown = add_event(redis_client, "order-7", "completed", returnvalue='{"sent":true}')
    message = await events_tab.receive_json_from(timeout=5)
    assert [event["id"] for event in message["events"]] == [shown]
    assert message["events"][0]["row"] is not None
    assert rendered == [shown]
    for socket in (overview, counts, events_tab):
        await socket.disconnect()


@pytest.mark.usefixtures("hub")
@pytest.mark.parametrize("options", [{"job": "a:b"}, {"job": 7}, {"bodies": "no"}])
async def test_a_bad_filter_is_refused_for_that_queue(options: dict[str, Any]) -> None:
    communicator = await viewer_socket()
    reply = await subscribe(communicator, **options)
    assert reply == {"type": "error", "queue": QUEUE, "message": "bad filter"}
    await communicator.disconnect()


# --- bounds: which queues, how many, how many Redis connections ---------------------


def blocked_reads(redis: Redis) -> int:
    """Connections blocked in XREAD (the live readers' reads), from CLIENT LIST."""
    return sum(1 for client in redis.client_list() if client.get("cmd") == "xread")


def live_connections(redis: Redis) -> int:
    return sum(1 for c in redis.client_list() if c.get("name", "").startswith("echomq-live"))


async def wait_until(check: Any, timeout: float = 3.0) -> bool:
    deadline = time.monotonic() + timeout
    while not check():
        if time.monotonic() > deadline:
            return False
        await asyncio.sleep(0.02)
    return True


async def subscribe_many(communicator: WebsocketCommunicator, queues: list[str]) -> list[dict]:
    """Subscribe to ``queues`` in one message; the first answer for each of them."""
    await communicator.send_json_to(
        {"type": "subscribe", "queues": [{"queue": q, "last_id": None} for q in queues]}
    )
    answers: dict[str, dict[str, Any]] = {}
    while len(answers) < len(queues):
        message = await communicator.receive_json_from(timeout=30)
        answers.setdefault(message["queue"], message)
    return [answers[q] for q in queues]


def existing_queues(redis: Redis, count: int) -> list[str]:
    names = [f"q{n}" for n in range(count)]
    for name in names:
        redis.set(QueueKeys(name).id, 0)
    return [f"bull:{name}" for name in names]


@pytest.mark.usefixtures("hub")
async def test_queues_that_do_not_exist_are_refused_and_read_by_nobody(redis_client: Redis) -> None:
    """A subscription per made-up name used to start a blocking reader each."""
    communicator = await viewer_socket()
    names = [f"bull:no-such-queue-{n}" for n in range(100)]
    answers = await subscribe_many(communicator, names)
    assert {a["type"] for a in answers} == {"error"}
    assert {a["message"] for a in answers} == {"unknown queue"}
    assert get_hub().streams == {}
    assert blocked_reads(redis_client) == 0
    # The socket stays usable.
    assert (await subscribe(communicator))["type"] == "subscribed"
    live = add_event(redis_client, "1")
    assert await received_ids(communicator, 1) == [live]
    await communicator.disconnect()


@pytest.mark.usefixtures("hub")
async def test_subscriptions_past_the_limit_get_an_error_and_the_socket_stays_usable(
    redis_client: Redis, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(consumer_module, "MAX_QUEUES_PER_SOCKET", 3)
    queues = existing_queues(redis_client, 5)
    communicator = await viewer_socket()
    answers = await subscribe_many(communicator, queues[:2])
    assert [a["type"] for a in answers] == ["subscribed", "subscribed"]
    answers = await subscribe_many(communicator, queues[2:])
    assert [(a["type"], a.get("message")) for a in answers] == [
        ("subscribed", None),
        ("error", "too many queues"),
        ("error", "too many queues"),
    ]
    assert sorted(get_hub().streams) == sorted(queues[:3])
    # Subscribing again to one it has is no new queue; events still come.
    assert (await subscribe(communicator, queue=queues[0]))["type"] == "subscribed"
    event = redis_client.xadd(QueueKeys("q0").events, {"event": "added", "jobId": "1"}).decode()
    assert await received_ids(communicator, 1) == [event]
    await communicator.disconnect()


@pytest.mark.usefixtures("hub")
async def test_sockets_on_many_queues_share_a_few_redis_connections_and_free_them(
    redis_client: Redis,
) -> None:
    """4 sockets x 150 queues: one blocking XREAD per queue per socket used to
    mean 600 connections, still open after the sockets went."""
    from dashboard.live.hub import CONTROL_CONNECTIONS, READERS

    queues = existing_queues(redis_client, 150)
    user = await asyncio.to_thread(make_user)
    sockets = [await connect_as(user) for _ in range(4)]
    for communicator in sockets:
        answers = await subscribe_many(communicator, queues)
        assert {a["type"] for a in answers} == {"subscribed"}
    assert live_connections(redis_client) <= READERS + CONTROL_CONNECTIONS
    assert blocked_reads(redis_client) <= READERS
    # Every queue is read: an event on the last one reaches every socket.
    event = redis_client.xadd(QueueKeys("q149").events, {"event": "added", "jobId": "9"}).decode()
    for communicator in sockets:
        assert await received_ids(communicator, 1) == [event]
    for communicator in sockets:
        await communicator.disconnect()
    assert get_hub().streams == {}
    assert get_hub().readers == []
    assert await wait_until(lambda: blocked_reads(redis_client) == 0)


@pytest.mark.usefixtures("hub")
async def test_a_socket_cut_off_in_the_middle_of_subscribing_leaves_no_reader(
    redis_client: Redis,
) -> None:
    """Daphne cancels an application that has not finished 10 s after its client
    went; a socket cancelled mid-subscribe must still let go of every stream."""
    queues = existing_queues(redis_client, 300)
    communicator = await viewer_socket()
    await communicator.send_json_to(
        {"type": "subscribe", "queues": [{"queue": q, "last_id": "0-0"} for q in queues]}
    )
    assert await wait_until(lambda: len(get_hub().streams) >= 50, timeout=30)
    communicator.future.cancel()
    with contextlib.suppress(asyncio.CancelledError):
        await communicator.future
    assert get_hub().streams == {}
    assert get_hub().readers == []
    assert await wait_until(lambda: blocked_reads(redis_client) == 0)


def swallowing_cancel(command: Any, entered: asyncio.Event | None = None) -> Any:
    """``command`` made to swallow a cancel as redis-py does on Python 3.11.

    redis-py sends under ``asyncio.wait_for`` when the client has a socket
    timeout; 3.11's ``wait_for`` drops a cancel that arrives as the send
    finishes, and the command then returns normally. Here the command waits
    (``entered`` says when) and returns an empty answer when cancelled.
    """

    async def swallowing(*args: Any, **kwargs: Any) -> Any:
        if entered is not None:
            entered.set()
            try:
                await asyncio.sleep(30)
            except asyncio.CancelledError:
                return []
        try:
            return await command(*args, **kwargs)
        except asyncio.CancelledError:
            return []

    return swallowing


@pytest.mark.usefixtures("hub")
async def test_a_socket_cancelled_while_a_redis_command_swallows_the_cancel_still_ends(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The cancel daphne sends a socket whose client went must end it, even when
    it lands in a Redis command that swallows it (CI hung on this for 90 min)."""
    hub = get_hub()
    entered = asyncio.Event()
    monkeypatch.setattr(hub.client, "xrevrange", swallowing_cancel(hub.client.xrevrange, entered))
    communicator = await viewer_socket()
    await communicator.send_json_to(
        {"type": "subscribe", "queues": [{"queue": QUEUE, "last_id": None}]}
    )
    await asyncio.wait_for(entered.wait(), 5)
    communicator.future.cancel()
    done, _ = await asyncio.wait([communicator.future], timeout=5)
    assert done, "the socket went on after it was cancelled"
    assert hub.streams == {}
    assert hub.readers == []


@pytest.mark.usefixtures("hub")
async def test_a_reader_whose_stop_a_redis_command_swallows_still_ends(
    redis_client: Redis, monkeypatch: pytest.MonkeyPatch
) -> None:
    from redis.asyncio import Redis as AsyncRedis

    monkeypatch.setattr(AsyncRedis, "xread", swallowing_cancel(AsyncRedis.xread))
    communicator = await viewer_socket()
    assert (await subscribe(communicator))["type"] == "subscribed"
    [reader] = get_hub().readers
    assert await wait_until(lambda: blocked_reads(redis_client) == 1)
    await communicator.disconnect()
    done, _ = await asyncio.wait([reader.task], timeout=5)
    assert done, "the reader went on reading after it was stopped"
    assert await wait_until(lambda: blocked_reads(redis_client) == 0)


# --- bad input: 4400 or an error, never a server error ------------------------------


@pytest.mark.usefixtures("hub")
@pytest.mark.parametrize(
    "last_id",
    ["18446744073709551616-0", "1-18446744073709551616", "99999999999999999999-0"],
)
async def test_a_stream_id_past_64_bits_is_no_position_not_a_server_error(
    redis_client: Redis, last_id: str
) -> None:
    tip = add_event(redis_client, "1")
    communicator = await viewer_socket()
    assert await subscribe(communicator, last_id) == {
        "type": "subscribed",
        "queue": QUEUE,
        "last_id": tip,
    }
    live = add_event(redis_client, "2")
    assert await received_ids(communicator, 1) == [live]
    await communicator.disconnect()


@pytest.mark.usefixtures("hub")
async def test_the_newest_possible_stream_id_replays_nothing(redis_client: Redis) -> None:
    add_event(redis_client, "1")
    newest = "18446744073709551615-18446744073709551615"
    communicator = await viewer_socket()
    assert await subscribe(communicator, newest) == {
        "type": "subscribed",
        "queue": QUEUE,
        "last_id": newest,
    }
    assert await communicator.receive_nothing(timeout=0.3)
    await communicator.disconnect()


@pytest.mark.usefixtures("hub")
@pytest.mark.parametrize(
    "frame",
    [
        {"bytes_data": b"\x00\x01binary"},
        {"text_data": "[" * 100_000 + "]" * 100_000},
        {"text_data": '{"type": "subscribe", "queues": ' + "[" * 50_000 + "]" * 50_000 + "}"},
        {"text_data": "1" * 5000},  # past Python's int-from-string limit
    ],
    ids=["binary", "nested-list", "nested-queues", "huge-number"],
)
async def test_binary_and_unparseable_frames_close_with_4400(frame: dict[str, Any]) -> None:
    communicator = await viewer_socket()
    await communicator.send_to(**frame)
    assert await communicator.receive_output(timeout=5) == {"type": "websocket.close", "code": 4400}


# --- a Redis outage --------------------------------------------------------------------


@pytest.fixture
async def own_redis(settings: Any) -> AsyncIterator[RestartableRedis]:
    """The hub on a redis-server of this test's own, which it may stop and start."""
    with restartable_redis() as redis:
        settings.REDIS_URL = redis.url
        settings.ECHOMQ_QUEUES = ["emails"]
        yield redis
        await get_hub().close()


async def test_a_redis_outage_is_told_and_nothing_is_lost_once_it_is_back(
    own_redis: RestartableRedis, monkeypatch: pytest.MonkeyPatch
) -> None:
    redis = connect(own_redis.url)
    communicator = await viewer_socket()
    assert (await subscribe(communicator))["type"] == "subscribed"
    seen = add_event(redis, "1")
    assert await received_ids(communicator, 1) == [seen]

    own_redis.stop()
    started = time.monotonic()
    assert await communicator.receive_json_from(timeout=5) == {
        "type": "status",
        "redis": "unreachable",
    }
    assert time.monotonic() - started < 5

    own_redis.start()
    assert await communicator.receive_json_from(timeout=10) == {"type": "status", "redis": "ok"}
    after = [add_event(redis, str(n)) for n in (2, 3)]
    # The page subscribes again from the last event it has (live.js onStatus).
    reply = await subscribe(communicator, seen)
    assert reply["type"] == "subscribed"
    ids: list[str] = []
    while len(ids) < 2:
        ids.extend(await received_ids(communicator, 1))
    assert ids == after
    assert await communicator.receive_nothing(timeout=0.3)
    await communicator.disconnect()
    redis.close()


async def test_subscribing_while_redis_is_down_says_so_then_works_once_it_is_back(
    own_redis: RestartableRedis,
) -> None:
    redis = connect(own_redis.url)
    communicator = await viewer_socket()
    own_redis.stop()
    await communicator.send_json_to(
        {"type": "subscribe", "queues": [{"queue": QUEUE, "last_id": None}]}
    )
    assert await communicator.receive_json_from(timeout=5) == {
        "type": "status",
        "redis": "unreachable",
    }
    assert await communicator.receive_json_from(timeout=5) == {
        "type": "error",
        "queue": QUEUE,
        "message": "Redis unreachable",
    }
    own_redis.start()
    assert await communicator.receive_json_from(timeout=10) == {"type": "status", "redis": "ok"}
    assert (await subscribe(communicator))["type"] == "subscribed"
    live = add_event(redis, "1")
    assert await received_ids(communicator, 1) == [live]
    await communicator.disconnect()
    redis.close()


async def test_an_overview_opened_while_redis_is_down_hears_the_queues_once_it_is_back(
    own_redis: RestartableRedis, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The dashboard started during an outage: the first read of the queue set
    comes after the page asked for it, however long the outage lasts, and
    reaches the page (before, a page whose ask had timed out heard of the
    queues only when the set next changed)."""
    from dashboard.live import hub as watcher

    monkeypatch.setattr(watcher, "WATCH_RETRY_S", 0.2)
    own_redis.stop()
    communicator = await viewer_socket()
    await communicator.send_json_to({"type": "discover"})
    assert await communicator.receive_json_from(timeout=5) == {
        "type": "status",
        "redis": "unreachable",
    }
    assert await communicator.receive_nothing(timeout=1.5)
    own_redis.start()
    told = [await communicator.receive_json_from(timeout=10) for _ in range(2)]
    assert {"type": "queues", "queues": [QUEUE]} in told
    await communicator.disconnect()


@pytest.mark.usefixtures("hub")
async def test_an_event_costs_a_page_under_two_hundred_bytes(redis_client: Redis) -> None:
    """Every page of a followed queue gets every event's message, and its
    browser pays for each byte (the network service takes the frame, the page
    parses it): 20 pages at 1,000 events/s took 14% of a core in Chromium's
    network service with each event's row as HTML (445 bytes an event), 8%
    with 151019d's values (179). A progress event as a reporter sends it:
    values only (presenters.event_row), no spaces."""
    communicator = await viewer_socket()
    await subscribe(communicator)
    for n in range(20):
        add_event(redis_client, str(4810 + n), "progress", data=str(n % 100))
    events, sent = 0, 0
    while events < 20:
        output = await communicator.receive_output(timeout=5)
        message = json.loads(output["text"])
        assert message["type"] == "events"
        events += len(message["events"])
        sent += len(output["text"])
    assert sent / events <= 200
    assert all(isinstance(event["row"], dict) for event in message["events"])
    await communicator.disconnect()


@pytest.mark.usefixtures("hub")
async def test_an_events_message_stays_under_the_servers_message_limit(redis_client: Redis) -> None:
    """Daphne refuses to send a message over 1 MiB: 500 events of 2 KB in one
    batch crashed the consumer (1011). The newest events that fit are sent, the
    rest counted as skipped, with a refresh."""
    from dashboard.live.consumer import MESSAGE_BYTES

    start = add_event(redis_client, "0")
    # A row carries its job id three times: ids another writer made 1 KB long.
    ids = [add_event(redis_client, f"{n}-" + "x" * 1000, "progress") for n in range(400)]
    # Its row (the id three times) is over the limit, the id alone is not.
    huge = add_event(redis_client, "y" * (MESSAGE_BYTES // 2), "failed")
    communicator = await viewer_socket()
    assert (await subscribe(communicator, start))["type"] == "subscribed"
    output = await communicator.receive_output(timeout=5)
    assert len(output["text"]) <= MESSAGE_BYTES
    message = json.loads(output["text"])
    assert message["refresh"] is True
    assert message["last_id"] == huge
    sent = [e["id"] for e in message["events"]]
    assert sent[-1] == huge
    assert message["events"][-1]["row"] is None  # too big on its own
    assert sent[:-1] == ids[len(ids) - len(sent) + 1 :]
    assert message["skipped"] == len(ids) + 1 - len(sent)
    await communicator.disconnect()


@pytest.mark.usefixtures("hub")
async def test_an_unknown_queue_name_is_echoed_no_longer_than_an_address_can_be() -> None:
    """A 200,000-character name came back whole in the error (issue 22)."""
    communicator = await viewer_socket()
    name = "bull:" + "x" * 200_000
    await communicator.send_json_to({"type": "subscribe", "queues": [{"queue": name}]})
    answer = await communicator.receive_json_from(timeout=10)
    assert (answer["type"], answer["message"]) == ("error", "unknown queue")
    assert len(answer["queue"]) <= 400  # the longest address: 40 + 1 + 100 + 1 + 200
    assert name.startswith(answer["queue"])
    await communicator.disconnect()
