"""The WebSocket a dashboard page keeps open to receive a queue's events live.

Protocol (JSON text frames):

browser -> server
    {"type": "subscribe", "queues": [{"queue": "bull:emails", "last_id": "1700000000000-0"}]}
        ``last_id`` is the newest event the page already shows (from the page's
        ``data-last-id`` or the last message it received); omit it (or null) to
        start from now. Subscribing again to a queue replaces the old position.
        Optional per queue, for pages that need less than every event:
        ``"job": id`` sends only that job's events (a job page), ``"bodies":
        false`` sends how many events came and their names instead of the
        events (pages that refetch counts and lists).
    {"type": "unsubscribe", "queues": ["bull:emails"]}
    {"type": "discover"}
        the page lists queues: send the set of queues now and whenever it changes

server -> browser
    {"type": "subscribed", "queue": q, "last_id": id}   position confirmed; replay follows
    {"type": "events", "queue": q, "events": [{"id", "event", "job_id", "fields"}, ...],
     "last_id": id, "skipped": n, "refresh": bool}
        (with ``"bodies": false``: ``"events": []`` plus ``"count": n`` and
        ``"kinds": [event names]``)
        oldest first; every event carries its stream id, ``last_id`` is the
        position to resume from. ``refresh`` (with ``skipped`` events left out,
        possibly all of them) means the page fell behind: reload counts rather
        than applying each event. With no events, no count and no refresh it
        only moves ``last_id``: a page with a job filter hears its position at
        most every POSITION_EVERY_S while other jobs' events pass.
    {"type": "gap", "queue": q, "last_id": id}   events were trimmed away (or too
        many missed): reload counts and lists, continue from ``last_id``
    {"type": "error", "queue": q, "message": text}
    {"type": "queues", "queues": ["bull:emails", ...]}   every queue the pages list
        (after "discover": at once, then on each change; see dashboard.live.discovery)

Close codes: 4401 not logged in, 4403 no permission to view, 4400 bad message.
Access is checked at connect and again every ``RECHECK_S`` seconds: a socket
whose session no longer holds (expired, the password changed, the user
deactivated) is closed with 4401, one whose user lost the view permission or
staff status with 4403. Sessions are signed cookies (settings), so logging out
in another tab leaves this socket's cookie valid until it expires, as it does
for the pages.

No event is lost between the replay and the live feed: the consumer joins the
reader's group, then publishes a barrier message through that same group and
replays only when the barrier comes back. Every event the reader published
before the barrier was already in the stream then, so the replay has it; every
event published after it reaches us through the group (pub/sub keeps the order
of one channel). Events seen by both are dropped by stream id.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import time
from dataclasses import dataclass
from importlib import import_module
from types import SimpleNamespace
from typing import Any

from channels.consumer import get_handler_name
from channels.db import database_sync_to_async
from channels.generic.websocket import AsyncJsonWebsocketConsumer
from django.conf import settings
from django.contrib import auth

from dashboard.live.discovery import QueueSetWatcher
from dashboard.live.hub import get_hub
from dashboard.live.streams import (
    EventPayload,
    Replay,
    newest_id,
    parse_stream_id,
    replay_after,
)
from dashboard.lookup import configured_queues, served_prefixes
from queues.inspect import QueueRef
from queues.keys import InvalidName, validate_job_id

CLOSE_NOT_LOGGED_IN = 4401
CLOSE_FORBIDDEN = 4403
CLOSE_BAD_MESSAGE = 4400
MAX_QUEUES_PER_SOCKET = 500
REPLAY_LIMIT = 1000
BARRIER_RETRY_S = 2.0
# A page is behind when one batch brings more than BEHIND_EVENTS events or when
# messages wait in the layer longer than BEHIND_S: it then gets counts of what
# it missed (at most every HINT_INTERVAL_S) and reloads, instead of every event.
BEHIND_EVENTS = 200
BEHIND_S = 1.0
HINT_INTERVAL_S = 1.0
FEED_KEEP = 500  # the Events tab keeps this many lines; more in one message is waste
DISCOVER_TIMEOUT_S = 10.0
# How long a logout or a revoked permission may leave an open socket streaming.
RECHECK_S = 30.0
# A page that gets only some events (a job filter) is told its resume position
# about this often while other events pass (an empty events message), so a
# reconnect replays from near there instead of running into REPLAY_LIMIT and
# reloading.
POSITION_EVERY_S = 5.0


def user_may_view(user: Any) -> bool:
    from dashboard import permissions

    return bool(permissions.can_view(user))


def access_now(user_pk: int | str, session_key: str | None) -> int | None:
    """None while the socket's user may still watch; else the close code that says why.

    The user is loaded afresh (active, staff and permissions as they are now);
    with a session, through it as a request would (an expired session or a
    changed password ends it). Tests connect with a user and no session.
    """
    user: Any
    if session_key is not None:
        store = import_module(settings.SESSION_ENGINE).SessionStore(session_key)
        user = auth.get_user(SimpleNamespace(session=store))  # type: ignore[arg-type]
    else:
        user = auth.get_user_model()._default_manager.filter(pk=user_pk).first()
    if user is None or not user.is_authenticated or user.pk != user_pk:
        return CLOSE_NOT_LOGGED_IN
    return None if user_may_view(user) else CLOSE_FORBIDDEN


@dataclass
class Subscription:
    ref: str
    group: str
    resume_from: str | None
    job: str | None = None  # only this job's events
    bodies: bool = True  # False: how many events and their names, not the events
    last_sent: tuple[int, int] = (0, 0)
    skipped: int = 0
    hinted_at: float = 0.0
    # The position this page last heard (every message carries it), and when.
    told: tuple[int, int] = (0, 0)
    told_at: float = 0.0
    # Until our barrier comes back, live events are dropped: each of them was in
    # the stream before the barrier was published, so the replay has it.
    replaying: bool = True
    barrier: asyncio.Task[None] | None = None

    def stop_barrier(self) -> None:
        if self.barrier is not None:
            self.barrier.cancel()
            self.barrier = None


class LiveConsumer(AsyncJsonWebsocketConsumer):  # type: ignore[misc]
    async def dispatch(self, message: dict[str, Any]) -> None:
        """Channels' dispatch, minus its close of stale database connections.

        Channels runs that close before every handler, as a hop to its one
        thread for synchronous code: with every page getting tens of messages
        a second, those hops were a third of the server's CPU and queued each
        message behind all the others. This consumer touches the database only
        through ``database_sync_to_async``, which closes them itself.
        """
        handler = getattr(self, get_handler_name(message), None)
        if handler is None:
            raise ValueError(f"no handler for message type {message['type']!r}")
        await handler(message)

    async def connect(self) -> None:
        self.subscriptions: dict[str, Subscription] = {}
        self.queue_watcher: QueueSetWatcher | None = None
        user = self.scope.get("user")
        # Accept, then close: a handshake refusal reaches the browser as a bare
        # 1006, while a close code after accept tells the page why.
        self.recheck: asyncio.Task[None] | None = None
        await self.accept()
        if user is None or not user.is_authenticated:
            await self.close(code=CLOSE_NOT_LOGGED_IN)
        elif not await database_sync_to_async(user_may_view)(user):
            await self.close(code=CLOSE_FORBIDDEN)
        else:
            session = self.scope.get("session")
            session_key = getattr(session, "session_key", None)
            self.recheck = asyncio.create_task(self._recheck_access(user.pk, session_key))

    async def _recheck_access(self, user_pk: int | str, session_key: str | None) -> None:
        while True:
            await asyncio.sleep(RECHECK_S)
            code = await database_sync_to_async(access_now)(user_pk, session_key)
            if code is not None:
                await self.close(code=code)
                return

    async def disconnect(self, code: int) -> None:
        recheck = getattr(self, "recheck", None)
        if recheck is not None and recheck is not asyncio.current_task():
            recheck.cancel()
        for ref in list(getattr(self, "subscriptions", {})):
            await self._unsubscribe(ref)
        watcher = getattr(self, "queue_watcher", None)
        if watcher is not None:
            self.queue_watcher = None
            await self.channel_layer.group_discard(watcher.group, self.channel_name)
            await get_hub().unwatch_queues()

    @classmethod
    async def decode_json(cls, text_data: str) -> Any:
        try:
            return json.loads(text_data)
        except ValueError:
            return None  # not JSON: receive_json closes with CLOSE_BAD_MESSAGE

    async def receive_json(self, content: Any, **kwargs: Any) -> None:
        kind = content.get("type") if isinstance(content, dict) else None
        if kind == "discover":
            await self._discover()
            return
        queues = content.get("queues") if isinstance(content, dict) else None
        if (
            kind not in ("subscribe", "unsubscribe")
            or not isinstance(queues, list)
            or len(queues) > MAX_QUEUES_PER_SOCKET
        ):
            await self.close(code=CLOSE_BAD_MESSAGE)
            return
        for item in queues:
            if kind == "unsubscribe":
                with contextlib.suppress(InvalidName):
                    await self._unsubscribe(QueueRef.parse(str(item)).qualified)
            elif isinstance(item, dict):
                await self._subscribe(item)

    async def _discover(self) -> None:
        if self.queue_watcher is not None:
            return  # asked twice: the set already comes
        watcher = self.queue_watcher = await get_hub().watch_queues()
        # Join first, then read: a change after this read arrives as a message.
        await self.channel_layer.group_add(watcher.group, self.channel_name)
        try:
            await asyncio.wait_for(watcher.ready.wait(), DISCOVER_TIMEOUT_S)
        except TimeoutError:
            return  # Redis unreachable: the page keeps the queues it shows
        await self.send_json({"type": "queues", "queues": watcher.known})

    async def live_queues(self, message: dict[str, Any]) -> None:
        await self.send_json({"type": "queues", "queues": message["queues"]})

    async def _subscribe(self, item: dict[str, Any]) -> None:
        raw_ref, last_id, job, bodies = (
            item.get("queue"),
            item.get("last_id"),
            item.get("job"),
            item.get("bodies", True),
        )
        try:
            queue = QueueRef.parse(raw_ref) if isinstance(raw_ref, str) else None
        except InvalidName:
            queue = None
        if queue is None or not may_subscribe(queue):
            await self.send_json({"type": "error", "queue": raw_ref, "message": "unknown queue"})
            return
        if not isinstance(bodies, bool) or not (job is None or valid_job_id(job)):
            await self.send_json({"type": "error", "queue": raw_ref, "message": "bad filter"})
            return
        ref = queue.qualified
        if ref not in self.subscriptions and len(self.subscriptions) >= MAX_QUEUES_PER_SOCKET:
            await self.send_json({"type": "error", "queue": ref, "message": "too many queues"})
            return
        await self._unsubscribe(ref)
        group = await get_hub().acquire(ref)
        resume = last_id if parse_stream_id(last_id) is not None else None
        sub = self.subscriptions[ref] = Subscription(
            ref,
            group,
            resume,
            job=job,
            bodies=bodies,
        )
        await self.channel_layer.group_add(group, self.channel_name)
        sub.barrier = asyncio.create_task(self._barrier_until_back(sub))

    async def _barrier_until_back(self, sub: Subscription) -> None:
        """Send our barrier through the group, again if pub/sub lost it (a reconnect)."""
        barrier = {"type": "live.barrier", "queue": sub.ref, "target": self.channel_name}
        while self.subscriptions.get(sub.ref) is sub and sub.replaying:
            await self.channel_layer.group_send(sub.group, barrier)
            await asyncio.sleep(BARRIER_RETRY_S)

    async def _unsubscribe(self, ref: str) -> None:
        sub = self.subscriptions.pop(ref, None)
        if sub is not None:
            sub.stop_barrier()
            await self.channel_layer.group_discard(sub.group, self.channel_name)
            await get_hub().release(ref)

    async def live_barrier(self, message: dict[str, Any]) -> None:
        """Our own barrier is back: the group feeds us, so replay what came before it."""
        sub = self.subscriptions.get(message["queue"])
        if message["target"] != self.channel_name or sub is None or not sub.replaying:
            return
        client = get_hub().client
        stream_key = QueueRef.parse(sub.ref).keys.events
        if sub.resume_from is None:
            replay = Replay([], False, await newest_id(client, stream_key))
        else:
            replay = await replay_after(client, stream_key, sub.resume_from, REPLAY_LIMIT)
        kind = "gap" if replay.gap else "subscribed"
        await self.send_json({"type": kind, "queue": sub.ref, "last_id": replay.tip})
        sub.last_sent = sub.told = parse_stream_id(replay.tip) or (0, 0)
        sub.told_at = time.monotonic()
        sub.replaying = False
        sub.stop_barrier()
        await self._send_events(sub, replay.events)

    async def live_events(self, message: dict[str, Any]) -> None:
        # ``message`` is shared with every consumer of this process in the group
        # (decoded once, dashboard/live/layer.py): read it, never change it.
        sub = self.subscriptions.get(message["queue"])
        if sub is None or sub.replaying:
            return
        events = self._unseen(sub, message["events"])
        if events and time.monotonic() - message["sent_at"] > BEHIND_S:
            await self._skip(sub, events)
        else:
            await self._send_events(sub, events)

    async def live_gap(self, message: dict[str, Any]) -> None:
        sub = self.subscriptions.get(message["queue"])
        if sub is None or sub.replaying:
            return  # the replay detects the gap itself
        sub.last_sent = sub.told = parse_stream_id(message["tip"]) or sub.last_sent
        sub.told_at = time.monotonic()
        await self.send_json({"type": "gap", "queue": sub.ref, "last_id": message["tip"]})

    @staticmethod
    def _unseen(sub: Subscription, events: list[EventPayload]) -> list[EventPayload]:
        return [e for e in events if (parse_stream_id(e["id"]) or (0, 0)) > sub.last_sent]

    async def _skip(self, sub: Subscription, events: list[EventPayload]) -> None:
        """This socket is behind: count events instead of sending them, hint now and then."""
        sub.skipped += len(events)
        sub.last_sent = parse_stream_id(events[-1]["id"]) or sub.last_sent
        now = time.monotonic()
        if now - sub.hinted_at >= HINT_INTERVAL_S:
            sub.hinted_at = now
            await self._send_events(sub, [])

    async def _send_events(self, sub: Subscription, events: list[EventPayload]) -> None:
        """Oldest first; a batch too big for the page becomes its newest part plus a hint."""
        skipped = sub.skipped + max(0, len(events) - FEED_KEEP)
        sent = events[-FEED_KEEP:]
        if sent:
            sub.last_sent = max(sub.last_sent, parse_stream_id(sent[-1]["id"]) or (0, 0))
        if sub.job is not None:
            sent = [e for e in sent if e["job_id"] == sub.job]
        now = time.monotonic()
        # Nothing for this page, but its position may have moved: an empty
        # message says so now and then (POSITION_EVERY_S).
        quiet = sub.last_sent == sub.told or now - sub.told_at < POSITION_EVERY_S
        if not sent and not skipped and quiet:
            return
        sub.skipped = 0
        sub.told, sub.told_at = sub.last_sent, now
        message: dict[str, Any] = {
            "type": "events",
            "queue": sub.ref,
            "events": sent,
            "last_id": "{}-{}".format(*sub.last_sent),
            "skipped": skipped,
            "refresh": skipped > 0 or len(events) > BEHIND_EVENTS,
        }
        if not sub.bodies:
            message["events"] = []
            message["count"] = len(sent)
            message["kinds"] = sorted({e["event"] for e in sent})
        await self.send_json(message)


def valid_job_id(value: object) -> bool:
    if not isinstance(value, str):
        return False
    try:
        validate_job_id(value)
    except InvalidName:
        return False
    return True


def may_subscribe(queue: QueueRef) -> bool:
    """The queues the pages may show: configured ones and those under a served prefix."""
    return queue.prefix in served_prefixes() or queue in configured_queues()
