"""The WebSocket a dashboard page keeps open for its queues' events: one
``LiveConsumer`` per socket, which checks access, subscribes through the shared
readers (dashboard.live.hub), replays what the page missed, and sends through a
bounded outbox. Messages, close codes, why the replay loses nothing: docs/live.md.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import time
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass, field
from importlib import import_module
from typing import Any

from channels.auth import get_user
from channels.consumer import get_handler_name
from channels.db import database_sync_to_async
from channels.exceptions import StopConsumer
from channels.generic.websocket import AsyncWebsocketConsumer
from django.conf import settings
from django.contrib import auth
from redis.exceptions import RedisError

from dashboard.core import conf, connections
from dashboard.core.lookup import served_queues_async
from dashboard.core.permissions import can_view
from dashboard.live.hub import (
    Batch,
    EventPayload,
    Message,
    StreamHub,
    get_hub,
    payload,
    raise_if_cancelled,
)
from dashboard.live.outbox import STALL_CLOSE_S, Outbox, SharedText, daphne_protocol
from dashboard.shared.connection_groups import OUTAGES
from queues.keys import InvalidName, validate_job_id
from queues.read.refs import QueueRef
from queues.read.stream import Missed, missed_after, newest_id, parse_stream_id

log = logging.getLogger("echomq.live")

CLOSE_NOT_LOGGED_IN = 4401
CLOSE_FORBIDDEN = 4403
CLOSE_BAD_MESSAGE = 4400
CLOSE_TOO_SLOW = 4408
CLOSE_SERVER_ERROR = 1011
CLOSE_TOO_MANY = 4429
REDIS_UNREACHABLE = "Redis unreachable"
# What a status message says of Redis.
STATUS_OK, STATUS_UNREACHABLE, STATUS_FAILING_OVER = "ok", "unreachable", "failing_over"
# The overview subscribes to every queue it lists: this is also how many of
# them update live on it.
MAX_QUEUES_PER_SOCKET = 500
REPLAY_LIMIT = 1000
# A replay that could not be read (Redis unreachable) is tried again this often.
BARRIER_RETRY_S = 0.5
# A page is behind (one batch of more than BEHIND_EVENTS, or batches waiting
# over BEHIND_S): it gets counts of what it missed, at most every HINT_INTERVAL_S.
BEHIND_EVENTS = 200
BEHIND_S = 1.0
HINT_INTERVAL_S = 1.0
FEED_KEEP = 500  # the Events tab keeps this many lines; more in one message is waste
# A queue's address is at most 342 characters (a connection's name 40, a
# prefix 100, a name 200): an error echoes no more of the name it refuses.
ECHOED_NAME_CHARS = 400
# Daphne refuses messages over 1 MiB, and a socket must take its outbox plus one
# message within STALL_CLOSE_S: an events message is cut to this.
MESSAGE_BYTES = 256 * 1024
# How long a logout or a revoked permission may leave an open socket streaming.
RECHECK_S = 30.0
# A page with a job filter hears its position this often while other events
# pass, so a reconnect does not run into REPLAY_LIMIT.
POSITION_EVERY_S = 5.0
# A job filter's ids (a flow's tree), bounded as the queues per socket are.
MAX_JOBS_PER_FILTER = 100
# Live pages open in this process by user pk, at most conf.live_sockets_per_user().
_sockets_of: Counter[Any] = Counter()
# Messages a socket may leave waiting (about 5 s of a busy queue's batches);
# past it a queue's further batches give way to one gap.
INBOX_MESSAGES = 256


async def access_now(scope: Mapping[str, Any]) -> int | None:
    """None while the socket's user may still watch, else the close code. The
    session is read again from its key so an expiry or a changed password shows
    now; a socket without one (a host's own auth) has its user reloaded."""
    user: Any = scope.get("user")
    session_key = getattr(scope.get("session"), "session_key", None)
    if session_key is not None:
        store = import_module(settings.SESSION_ENGINE).SessionStore(session_key)
        fresh = await get_user({"session": store})
    else:
        users = auth.get_user_model()._default_manager.filter(pk=user.pk)
        fresh = await database_sync_to_async(users.first)()
    if fresh is None or not fresh.is_authenticated or fresh.pk != user.pk:
        return CLOSE_NOT_LOGGED_IN
    return None if await database_sync_to_async(can_view)(fresh) else CLOSE_FORBIDDEN


class Inbox(asyncio.Queue[Message]):
    """One socket's messages in order. ``put_nowait`` takes what must not be dropped
    (client frames, which the outbox bounds; barriers; the queue set);
    ``deliver`` the streams' batches and gaps, bounded."""

    def __init__(self) -> None:
        super().__init__()
        self.waiting = False  # the socket's task waits in ``get``
        # A queue whose batches are dropped: the gap marker waiting in the inbox for it.
        self._lagging: dict[str, Message] = {}

    def deliver(self, message: Message) -> None:
        """A queue's batch or gap (with its ``queue`` and newest id, ``tip``); never waits."""
        queue = message["queue"]
        marker = self._lagging.get(queue)
        if marker is not None:
            marker["tip"] = message["tip"]  # the page will continue from the newest missed
            return
        if self.qsize() >= INBOX_MESSAGES:
            message = {"type": "live.gap", "queue": queue, "tip": message["tip"]}
            self._lagging[queue] = message
        self.put_nowait(message)

    async def get(self) -> Message:
        self.waiting = True
        message = await super().get()  # a cancel here ends the socket: it lets go of all
        self.waiting = False
        if message["type"] == "live.gap" and self._lagging.get(message["queue"]) is message:
            del self._lagging[message["queue"]]  # later batches of the queue are kept again
        return message


@dataclass(eq=False)
class Subscription:
    """One queue a socket watches (an item of a subscribe message, checked); the
    stream hands it batches, which it passes to its socket."""

    socket: LiveConsumer
    queue: QueueRef
    resume_from: str | None
    job: frozenset[str] | None  # only these jobs' events
    bodies: bool  # False: how many events and their names, not the events
    ref: str = field(init=False)  # the queue's address
    last_sent: tuple[int, int] = (0, 0)
    skipped: int = 0
    hinted_at: float = 0.0
    # The position this page last heard, and when.
    told: tuple[int, int] = (0, 0)
    told_at: float = 0.0
    # Until our barrier comes back, live events are dropped: the replay has them.
    replaying: bool = True
    barrier: asyncio.TimerHandle | None = None  # the replay's next try
    # Events went unsent while the outbox was full: a gap is owed.
    missed: bool = False

    def __post_init__(self) -> None:
        self.ref = self.queue.address

    def deliver(self, message: Message) -> None:
        """Under daphne a batch that finds the socket's task idle is sent from the
        reader's hand-out (docs/live.md, "One inbox per socket"); else queued."""
        inbox = self.socket.inbox
        if not (inbox.waiting and inbox.empty() and self.socket.send_now(message)):
            inbox.deliver(message)


def stream_id(position: tuple[int, int]) -> str:
    return "{}-{}".format(*position)


class LiveConsumer(AsyncWebsocketConsumer):  # type: ignore[misc]
    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        """Channels' consumer on one ``Inbox`` (the client's frames and the readers'
        batches, in order); all the socket holds goes however it ends (an error or
        daphne's cancel would skip ``disconnect``)."""
        self.scope = scope
        self.base_send = send
        self.inbox = Inbox()
        self.subscriptions: dict[str, Subscription] = {}
        self.outbox: Outbox = scope.get("outbox") or Outbox(daphne_protocol(send))
        self.outbox.on_full = lambda: self._start(self._wait_for_reader())
        self.tasks: set[asyncio.Task[None]] = set()  # rechecks, status, stall watch
        self.giving_up = False
        self.told_status = STATUS_OK  # what the page assumes until told otherwise
        # The hubs (one per Redis connection) whose reachability this page hears.
        self.watched_hubs: set[StreamHub] = set()
        self.counted_as: Any = None  # the user pk this socket counts against
        client = asyncio.create_task(self._take_client_frames(receive))
        try:
            while True:
                await self.dispatch(await self.inbox.get())
        except StopConsumer:
            pass
        finally:
            client.cancel()
            self._let_go()

    async def _take_client_frames(self, receive: Any) -> None:
        try:
            while True:
                self.inbox.put_nowait(await receive())
        except Exception:  # the server's receive failed: end the socket as if it went
            log.exception("live socket: receive failed")
            self.inbox.put_nowait({"type": "websocket.disconnect", "code": 1011})

    async def dispatch(self, message: dict[str, Any]) -> None:
        """Channels' dispatch minus its per-message hop to close stale database
        connections (``database_sync_to_async`` closes them; docs/live.md)."""
        await getattr(self, get_handler_name(message))(message)
        raise_if_cancelled()  # daphne's cancel, should a Redis command have swallowed it

    def _start(self, job: Any) -> asyncio.Task[None]:
        task = asyncio.create_task(job)
        self.tasks.add(task)
        task.add_done_callback(self.tasks.discard)
        return task

    def _let_go(self) -> None:
        """Synchronous, so nothing can cut it short."""
        self.outbox.on_full = lambda: None  # no stall watch for a socket gone
        if self.counted_as is not None:
            _sockets_of[self.counted_as] -= 1
            if not _sockets_of[self.counted_as]:
                del _sockets_of[self.counted_as]
        for task in list(self.tasks):
            if task is not asyncio.current_task():
                task.cancel()
        for hub in self.watched_hubs:
            hub.status_listeners.discard(self._reachability_changed)
        self.watched_hubs.clear()
        for ref in list(self.subscriptions):
            self._drop(ref)
        get_hub().unwatch_queues(self.inbox.put_nowait)  # if it listed the queues

    async def connect(self) -> None:
        user = self.scope.get("user")
        # Accept, then close: a handshake refusal reaches the browser as a bare
        # 1006, while a close code after accept tells the page why.
        await self.accept()
        if user is None or not user.is_authenticated:
            await self.close(code=CLOSE_NOT_LOGGED_IN)
        elif not await database_sync_to_async(can_view)(user):
            await self.close(code=CLOSE_FORBIDDEN)
        elif _sockets_of[user.pk] >= conf.live_sockets_per_user():
            await self.close(code=CLOSE_TOO_MANY)
        else:
            self.counted_as = user.pk
            _sockets_of[user.pk] += 1
            self._start(self._recheck_access())
            self._watch_reachability(get_hub())

    async def _recheck_access(self) -> None:
        code = None
        while code is None:
            raise_if_cancelled()
            await asyncio.sleep(RECHECK_S)
            code = await access_now(self.scope)
        await self.close(code=code)

    # ------------------------------------------------------------ Redis there or not

    def _watch_reachability(self, hub: StreamHub) -> None:
        """Hear whether ``hub``'s Redis answers, from now on (once per hub)."""
        if hub not in self.watched_hubs:
            self.watched_hubs.add(hub)
            hub.status_listeners.add(self._reachability_changed)
            self._reachability_changed()  # it may be down already

    def _reachability_changed(self) -> None:
        self._start(self._tell_reachability())

    async def _tell_reachability(self) -> None:
        """Tell the page whether Redis answers, when that changed since it was last told."""
        down = [hub.failover for hub in self.watched_hubs if not hub.reachable]
        status = STATUS_OK
        if down:  # failing over while every connection down is failing over
            status = STATUS_UNREACHABLE if None in down else STATUS_FAILING_OVER
        if status != self.told_status:
            self.told_status = status
            await self.send_json({"type": "status", "redis": status})

    # ------------------------------------------------------------ what the client sends

    async def receive(
        self, text_data: str | None = None, bytes_data: bytes | None = None, **kwargs: Any
    ) -> None:
        try:  # a binary (or empty) frame is none of ours
            content = json.loads(text_data) if text_data else None
        except (ValueError, RecursionError):  # not JSON, or nested past Python's stack
            content = None
        kind = content.get("type") if isinstance(content, dict) else None
        items = content.get("queues") if isinstance(content, dict) else None
        if kind == "discover":
            await self._discover()
        elif (
            kind not in ("subscribe", "unsubscribe")
            or not isinstance(items, list)
            or len(items) > MAX_QUEUES_PER_SOCKET
        ):
            await self.close(code=CLOSE_BAD_MESSAGE)
        elif kind == "subscribe":
            await self._subscribe_all(items)
        else:
            for item in items:
                if isinstance(item, str):
                    with contextlib.suppress(InvalidName):
                        self._drop(QueueRef.from_address(item).address)

    async def _error(self, queue: object, message: str) -> None:
        if message == REDIS_UNREACHABLE:
            await self._tell_reachability()  # the page hears why before it hears of each queue
        # Echo a name, never a structure, and never more of it than any queue's
        # address can hold: the page matches it to a subscription of its own.
        named = queue[:ECHOED_NAME_CHARS] if isinstance(queue, str) else None
        await self.send_json({"type": "error", "queue": named, "message": message})

    async def _wanted(self, item: object) -> Subscription | None:
        """One item of a subscribe message, checked; None (and an error sent) when bad."""
        raw = item.get("queue") if isinstance(item, dict) else None
        try:
            queue = QueueRef.from_address(raw) if isinstance(raw, str) else None
        except InvalidName:
            queue = None
        if queue is not None and connections.named(queue.connection) is None:
            queue = None  # no such Redis connection
        if queue is None or not isinstance(item, dict):
            await self._error(raw, "unknown queue")
            return None
        job, bodies = item.get("job"), item.get("bodies", True)
        jobs = job_filter(job)
        if not isinstance(bodies, bool) or (job is not None and jobs is None):
            await self._error(queue.address, "bad filter")
            return None
        last_id = item.get("last_id")
        resume = last_id if parse_stream_id(last_id) is not None else None
        return Subscription(self, queue, resume, jobs, bodies)

    async def _subscribe_all(self, items: list[Any]) -> None:
        wanted = [sub for item in items if (sub := await self._wanted(item)) is not None]
        for name in dict.fromkeys(sub.queue.connection for sub in wanted):  # a hub at a time
            hub, group = get_hub(name), [sub for sub in wanted if sub.queue.connection == name]
            self._watch_reachability(hub)
            try:
                served = await hub.ask(served_queues_async(hub.client, [s.queue for s in group]))
            except (RedisError, OSError) as error:
                reason = REDIS_UNREACHABLE if isinstance(error, OUTAGES) else "Redis error"
                for sub in group:
                    await self._error(sub.ref, reason)
                continue
            for sub in group:
                raise_if_cancelled()  # a socket going away stops subscribing at once
                why_not = await self._subscribe(sub, served)
                if why_not is not None:
                    await self._error(sub.ref, why_not)

    async def _subscribe(self, sub: Subscription, served: set[QueueRef]) -> str | None:
        """Watch ``sub``'s queue from now on; None, or why not."""
        ref = sub.ref
        if sub.queue not in served:
            return "unknown queue"
        if ref not in self.subscriptions and len(self.subscriptions) >= MAX_QUEUES_PER_SOCKET:
            return "too many queues"
        try:  # the new one before the old one goes: the stream stays up
            await get_hub(sub.queue.connection).acquire(ref, sub)
        except OUTAGES:
            return REDIS_UNREACHABLE
        except RedisError:  # most likely a key of another type where the stream should be
            return "unreadable events stream"
        # No await from here to the barrier: every batch handed out from now on
        # is behind it in the inbox.
        old = self._drop(ref)
        if sub.resume_from is not None and old is not None and not old.replaying and not old.missed:
            # Everything up to old.last_sent went out on this socket and reaches
            # the page before what follows: replay after it, sending nothing twice.
            resumed = max(parse_stream_id(sub.resume_from) or (0, 0), old.last_sent)
            sub.resume_from = stream_id(resumed)
        self.subscriptions[ref] = sub
        self._put_barrier(sub)
        return None

    def _put_barrier(self, sub: Subscription) -> None:
        sub.barrier = None
        if self.subscriptions.get(sub.ref) is sub and sub.replaying:
            self.inbox.put_nowait({"type": "live.barrier", "queue": sub.ref, "subscription": sub})

    def _drop(self, ref: str) -> Subscription | None:
        """Forget a subscription and release its stream (synchronous: never cut short)."""
        sub = self.subscriptions.pop(ref, None)
        if sub is not None:
            if sub.barrier is not None:
                sub.barrier.cancel()
            get_hub(sub.queue.connection).release(ref, sub)
        return sub

    async def _discover(self) -> None:
        hub = get_hub()
        if self.inbox.put_nowait in hub.queue_listeners:
            return  # asked twice: the set already comes
        # Listen first, then read: a change after this read arrives as a
        # message, and so does the watcher's first read when there was none
        # yet (Redis down: whenever it is back; the page keeps what it shows).
        hub.watch_queues(self.inbox.put_nowait)
        if hub.queues_read:
            await self.send_json({"type": "queues", "queues": hub.known_queues})

    # ------------------------------------------------------------ what the hub hands us

    async def live_queues(self, message: dict[str, Any]) -> None:
        await self.send_json({"type": "queues", "queues": message["queues"]})

    async def live_barrier(self, message: dict[str, Any]) -> None:
        """Our barrier: what the stream handed out before it is in Redis, so replay that."""
        sub: Subscription = message["subscription"]
        if self.subscriptions.get(sub.ref) is not sub or not sub.replaying:
            return
        hub = get_hub(sub.queue.connection)
        key = sub.queue.keys.events
        try:
            if sub.resume_from is None:
                replay = Missed([], False, await hub.ask(newest_id(hub.client, key)))
            else:
                replay = await hub.ask(missed_after(hub.client, key, sub.resume_from, REPLAY_LIMIT))
        except OUTAGES:  # try again in a while: Redis may be back
            loop = asyncio.get_running_loop()
            sub.barrier = loop.call_later(BARRIER_RETRY_S, self._put_barrier, sub)
            return
        except RedisError:
            self._drop(sub.ref)
            await self._error(sub.ref, "unreadable events stream")
            return
        if self.subscriptions.get(sub.ref) is not sub:
            return  # replaced or dropped while the replay was read
        kind = "gap" if replay.gap else "subscribed"
        await self._send_position(sub, kind, replay.tip)
        sub.replaying = False
        await self._send_text(self._events_frame(sub, [payload(e, sub.ref) for e in replay.events]))

    async def live_events(self, message: dict[str, Any]) -> None:
        await self._send_text(self._batch_frame(message["batch"]))

    def send_now(self, message: Message) -> bool:
        """What ``live_events`` would do next, without a wake-up of this socket's
        task, where the frame can be written at once; False: the inbox takes it."""
        if message["type"] != "live.events" or self.giving_up or not self.outbox.can_send_shared():
            return False
        try:
            frame = self._batch_frame(message["batch"], queued=False)
            if frame is not None:
                self.outbox.send_shared(frame)
        except Exception:
            # In the reader's hand-out: end this socket, as a failure in its own
            # task would, and let the reader go on to the others.
            log.exception("live socket: sending a batch failed")
            self._start(self.close(code=CLOSE_SERVER_ERROR))
        return True

    def _batch_frame(self, batch: Batch, queued: bool = True) -> SharedText | None:
        """What this socket sends of ``batch`` (shared by every socket of the queue:
        read it, never change it); a socket whose inbox held it too long counts its
        events instead, and hints now and then."""
        sub = self.subscriptions.get(batch.queue)
        if sub is None or sub.replaying:
            return None
        events = batch.events
        whole = batch.first > sub.last_sent  # the usual case: nothing in it was sent yet
        if not whole:
            events = [e for e in events if (parse_stream_id(e["id"]) or (0, 0)) > sub.last_sent]
        if not (events and queued and time.monotonic() - batch.sent_at > BEHIND_S):
            return self._events_frame(sub, events, batch if whole else None)
        sub.skipped += len(events)
        sub.last_sent = parse_stream_id(events[-1]["id"]) or sub.last_sent
        now = time.monotonic()
        if now - sub.hinted_at < HINT_INTERVAL_S:
            return None
        sub.hinted_at = now
        return self._events_frame(sub, [])

    async def live_gap(self, message: dict[str, Any]) -> None:
        sub = self.subscriptions.get(message["queue"])
        if sub is None or sub.replaying:
            return  # the replay detects the gap itself
        sub.missed = False  # the gap says it all
        await self._send_position(sub, "gap", message["tip"])

    async def _send_position(self, sub: Subscription, kind: str, last_id: str) -> None:
        """A "subscribed" or "gap" message: where the page resumes from."""
        sub.last_sent = sub.told = parse_stream_id(last_id) or sub.last_sent
        sub.told_at = time.monotonic()
        await self.send_json({"type": kind, "queue": sub.ref, "last_id": last_id})

    # ------------------------------------------------------------ sending

    async def send_json(self, content: dict[str, Any]) -> None:
        await self._send_text(json.dumps(content))

    async def _send_text(self, text: str | SharedText | None) -> None:
        """Send ``text`` (None: nothing); a ``SharedText`` (the same for many sockets)
        goes as the frame prepared once for all of them where the server allows it."""
        if text is None or self.giving_up:
            return  # giving up: closed for not reading, nothing more for this client
        if isinstance(text, str):
            await self.send(text_data=text)
        elif not self.outbox.send_shared(text):
            await self.send(text_data=text.text)

    async def _wait_for_reader(self) -> None:
        """The client stopped taking what we send: close it, or owe gaps once it catches up."""
        try:
            await asyncio.wait_for(self.outbox.drained.wait(), STALL_CLOSE_S)
        except TimeoutError:
            self.giving_up = True
            await self.close(code=CLOSE_TOO_SLOW)
            return
        for sub in list(self.subscriptions.values()):
            if sub.missed and not sub.replaying:
                sub.missed, sub.skipped = False, 0
                await self._send_position(sub, "gap", stream_id(sub.last_sent))

    def _events_frame(
        self, sub: Subscription, events: list[EventPayload], batch: Batch | None = None
    ) -> SharedText | None:
        """The events message to send now (None: nothing), ``sub`` moved as if sent.
        With ``batch`` (``events`` are all of it) the frame is encoded once for
        every socket of the same filter."""
        if events:
            newest = batch.last if batch is not None else parse_stream_id(events[-1]["id"])
            sub.last_sent = max(sub.last_sent, newest or (0, 0))
        if self.outbox.full:
            # The client has not taken what it was sent: no more until it has,
            # then a gap (_wait_for_reader), and the page reloads.
            sub.missed = sub.missed or bool(events) or sub.skipped > 0
            return None
        skipped = sub.skipped + max(0, len(events) - FEED_KEEP)
        sent = events[-FEED_KEEP:]
        if sub.job is not None:
            sent = [e for e in sent if e["job_id"] in sub.job]
        now = time.monotonic()
        # Nothing for this page, but its position may have moved: an empty
        # message says so now and then (POSITION_EVERY_S).
        quiet = sub.last_sent == sub.told or now - sub.told_at < POSITION_EVERY_S
        if not sent and not skipped and quiet:
            return None
        # Skipped events counted before make this socket's frame its own; else
        # the first socket of a kind (all the frame depends on) encodes it for all.
        shared = batch.frames if batch is not None and sub.skipped == 0 else {}
        sub.skipped = 0
        sub.told, sub.told_at = sub.last_sent, now
        kind = (sub.bodies, sub.job)
        if kind not in shared:
            message: dict[str, Any] = {
                "type": "events",
                "queue": sub.ref,
                "events": sent,
                "last_id": stream_id(sub.last_sent),
                "skipped": skipped,
                "refresh": skipped > 0 or len(events) > BEHIND_EVENTS,
            }
            if not sub.bodies:
                message["events"] = []
                message["count"] = len(sent)
                message["kinds"] = sorted({e["event"] for e in sent})
            shared[kind] = SharedText(within_message_limit(message))
        return shared[kind]


def _dumps(message: dict[str, Any]) -> str:
    # No spaces after ":" and ",": every page of the queue gets each byte of
    # every event (about 20 of an event's 210), and its browser pays for it.
    return json.dumps(message, separators=(",", ":"))


def within_message_limit(message: dict[str, Any]) -> str:
    """The message as JSON of at most MESSAGE_BYTES: the newest events that fit,
    the rest counted as skipped; an event too big alone goes without its row."""
    text = _dumps(message)
    events = message["events"]
    while len(text) > MESSAGE_BYTES and events:
        if len(events) > 1:
            events = events[len(events) // 2 :]
        elif events[0]["row"] is not None:
            events = [{**events[0], "row": None}]
        else:
            events = []
        left_out = len(message["events"]) - len(events)
        text = _dumps(
            {**message, "events": events, "skipped": message["skipped"] + left_out, "refresh": True}
        )
    return text


def job_filter(value: object) -> frozenset[str] | None:
    """One job id or a list of at most MAX_JOBS_PER_FILTER; None when not valid."""
    ids = [value] if isinstance(value, str) else value
    if not isinstance(ids, list) or not 0 < len(ids) <= MAX_JOBS_PER_FILTER:
        return None
    try:
        return frozenset(validate_job_id(job_id) for job_id in ids)
    except (InvalidName, TypeError):  # TypeError: an id that is no string
        return None
