"""What one server process reads from Redis for all its live pages: a bounded
pool of blocking XREADs per connection (per slot on a cluster, the rest polled)
that hand each batch to the subscriptions and never wait for a socket, whether
Redis answers, and which queues exist. Design and bounds: docs/live.md,
docs/deploy.md ("Connections").
"""

from __future__ import annotations

import asyncio
import contextlib
import inspect
import logging
import time
import weakref
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any, Protocol, TypedDict, TypeVar

from redis.asyncio import Redis as AsyncRedis
from redis.asyncio.retry import Retry
from redis.backoff import NoBackoff
from redis.crc import key_slot
from redis.exceptions import ResponseError

from dashboard.core import connections
from dashboard.core.lookup import all_queues
from dashboard.core.redis import get_client, redis_url
from dashboard.live.outbox import SharedText
from dashboard.shared.connection_groups import OUTAGES
from dashboard.shared.presenters import EventRow, event_row, job_url_prefix
from queues import codec
from queues.connection import connect_async, split_cluster_flag
from queues.events import Event
from queues.read.refs import DEFAULT_CONNECTION, QueueRef
from queues.read.stream import newest_id, parse_stream_id, was_trimmed
from queues.sentinel import Failover, failing_over_async

log = logging.getLogger("echomq.live")
T = TypeVar("T")
Message = dict[str, Any]

READ_BATCH = 500  # events per stream per XREAD, and at most per batch handed out
# At most one batch per queue a window (10 ms, 20 ms from 7 pages on: each
# message costs every socket and browser; 30 ms saved no CPU, only added wait).
COALESCE_PER_SUBSCRIBER_S = 0.003
COALESCE_RANGE_S = (0.01, 0.02)
GAP_CHECK_BATCH = 100  # a read this big may follow a trim: check for a gap
READERS = 4
# Streams a reader takes before another starts: one XREAD over many quiet
# streams costs little.
STREAMS_PER_READER = 64
# On a cluster one XREAD cannot span slots: blocking readers for the first
# BLOCKING_SLOTS slots, one polling reader for the rest (uncapped, queues tagged
# one by one held READERS connections each).
BLOCKING_SLOTS = 4
POLL_S = 0.25
POLLED = -1  # the shard of the polling reader
CONTROL_CONNECTIONS = 4
BLOCK_MS = 2000
# A partition gives no error of its own: a read silent this long is an outage.
READ_TIMEOUT_S = BLOCK_MS / 1000 + 2
COMMAND_TIMEOUT_S = 5.0
CONNECT_TIMEOUT_S = 2.0
# Short: once Redis is back, pages resume within a few seconds.
RETRY_DELAYS_S = (0.1, 0.2, 0.5, 1.0)
PROBE_INTERVAL_S = 0.5
WATCH_INTERVAL_S = 3.0  # how often the set of queues is read while a page lists them
WATCH_RETRY_S = 5.0
# Named, so CLIENT LIST shows which connections are the live pages'.
READER_CLIENT_NAME = "echomq-live-reader"
CONTROL_CLIENT_NAME = "echomq-live"


def raise_if_cancelled() -> None:
    """Honour a cancel that a library swallowed: on Python 3.11 ``wait_for`` (under
    every redis-py command) can drop one (CPython gh-86296), yet the task still
    counts it, so the live side's loops check after each turn."""
    task = asyncio.current_task()
    if task is not None and task.cancelling():
        raise asyncio.CancelledError


class EventPayload(TypedDict):
    """One event as sent: what the page picks events by, and the values of its row
    (presenters.event_row's, as the pages' own rows; why not HTML: docs/live.md)."""

    id: str
    event: str
    job_id: str | None
    row: EventRow | None


@lru_cache(maxsize=4096)
def _job_prefix(address: str) -> str:
    """A queue's job URL without the id, reversed once per queue, not per event."""
    return job_url_prefix(QueueRef.from_address(address))


def payload(event: Event, address: str, *, row: bool = True) -> EventPayload:
    """``row=False`` when no page that gets it shows events: presenting is most
    of an event's cost on the server."""
    return {
        "id": event.stream_id,
        "event": event.event,
        "job_id": event.job_id,
        "row": event_row(event, _job_prefix(address)) if row else None,
    }


@dataclass(eq=False)
class Batch:
    """One stream's new events as one read brought them, shared read-only by the
    sockets; ``first`` and ``last`` parsed once here rather than by each."""

    queue: str
    events: list[EventPayload]
    sent_at: float  # time.monotonic() when the reader handed it out
    first: tuple[int, int] = field(init=False)
    last: tuple[int, int] = field(init=False)
    frames: dict[object, SharedText] = field(default_factory=dict)  # by kind of subscription

    def __post_init__(self) -> None:
        self.first = parse_stream_id(self.events[0]["id"]) or (0, 0)
        self.last = parse_stream_id(self.events[-1]["id"]) or (0, 0)

    def message(self) -> Message:
        return {
            "type": "live.events",
            "queue": self.queue,
            "tip": self.events[-1]["id"],
            "batch": self,
        }


class Subscriber(Protocol):
    """What a stream hands its batches to (a socket's subscription to one queue)."""

    bodies: bool  # whether it shows events (their rows), not only counts them

    def deliver(self, message: Message) -> None: ...


@dataclass(eq=False)
class Stream:
    """One queue's events stream as this process reads it, and the subscriptions to it."""

    ref: str
    key: str
    position: str  # the id of the last entry read (or the tip when it was first watched)
    reader: StreamReader
    subscribers: set[Subscriber] = field(default_factory=set)
    # A key of another type where the stream should be: not read until it goes.
    unreadable: bool = False

    def coalescing_window(self) -> float:
        low, high = COALESCE_RANGE_S
        return min(high, max(low, len(self.subscribers) * COALESCE_PER_SUBSCRIBER_S))

    def fan_out(self, message: Message) -> None:
        for subscriber in list(self.subscribers):
            if subscriber in self.subscribers:  # an earlier one's delivery may have released it
                subscriber.deliver(message)


class StreamReader:
    """One task and one connection reading a set of streams with one blocking XREAD."""

    def __init__(self, hub: StreamHub, shard: int) -> None:
        self.hub = hub
        self.shard = shard
        self.streams: dict[str, Stream] = {}  # by key
        self.reading: asyncio.Future[Any] | None = None
        self.stale = False  # the set of streams changed since the read in flight was sent
        # No silent retries: after a dropped connection the reader checks for a trim.
        self.client: AsyncRedis = connect_async(
            redis_url(hub.connection),
            client_name=READER_CLIENT_NAME,
            retry=Retry(NoBackoff(), 0),
            socket_timeout=READ_TIMEOUT_S,
            socket_connect_timeout=CONNECT_TIMEOUT_S,
        )
        self.task = asyncio.create_task(self._run(), name=f"echomq-live-reader:{shard}")

    def add(self, stream: Stream) -> None:
        self.streams[stream.key] = stream
        self._read_again()

    def remove(self, stream: Stream) -> None:
        self.streams.pop(stream.key, None)
        self._read_again()

    def _read_again(self) -> None:
        """Cut short the read in flight, which names the old set of streams."""
        self.stale = True
        if self.reading is not None:
            self.reading.cancel()

    async def _run(self) -> None:
        failures = 0
        sent_at, window = 0.0, 0.0
        try:
            while True:
                raise_if_cancelled()  # a stop that the last read's send swallowed
                try:
                    if failures:
                        # Entries may have been trimmed while Redis was unreachable.
                        for stream in list(self.streams.values()):
                            await self._gap_if_trimmed(stream)
                    # At most one message per window: the time spent reading counts.
                    wait = sent_at + window - time.monotonic()
                    if wait > 0:
                        await asyncio.sleep(wait)
                    read = await self._read()
                    failures = 0
                    self.hub.report(reachable=True)
                    window = 0.0
                    for stream, entries in read:
                        if await self._publish(stream, entries):
                            window = max(window, stream.coalescing_window())
                    sent_at = time.monotonic()
                except Exception as exc:
                    # Redis down, a bad entry: keep reading, resume in place.
                    delay = RETRY_DELAYS_S[min(failures, len(RETRY_DELAYS_S) - 1)]
                    failures += 1
                    outage = isinstance(exc, OUTAGES)
                    if outage:
                        self.hub.report(reachable=False)
                    elif isinstance(exc, ResponseError):
                        # An answer, not an outage: most likely a key of another
                        # type where a stream should be. Stop reading that one.
                        with contextlib.suppress(Exception):
                            await self._set_aside_unreadable(exc)
                    level = logging.WARNING if outage else logging.ERROR
                    log.log(level, "live reader: %r; retrying in %.1fs", exc, delay)
                    await asyncio.sleep(delay)
        finally:
            await self.client.aclose()

    async def _read(self) -> list[tuple[Stream, list[Any]]]:
        """The next entries of any of the streams; [] when the set of streams changed."""
        self.stale = False
        positions = {key: s.position for key, s in self.streams.items() if not s.unreadable}
        if not positions:  # nothing to read: wait until the set of streams changes
            await self._cut_short_by_changes(asyncio.get_running_loop().create_future())
            return []
        return await self._read_from(positions)

    async def _read_from(self, positions: dict[str, str]) -> list[tuple[Stream, list[Any]]]:
        read = self.client.xread(positions, count=READ_BATCH, block=BLOCK_MS)  # type: ignore[arg-type]
        return self._found(await self._cut_short_by_changes(read) or ())

    async def _cut_short_by_changes(self, awaitable: Awaitable[T]) -> T | None:
        """``awaitable``'s result, or None when ``_read_again`` cut it short (not a stop)."""
        # One task, awaited directly: with a hundred sockets' handlers queued in
        # the loop, every extra hop here delays the next batch by all of them.
        reading = asyncio.ensure_future(awaitable)
        self.reading = reading
        try:
            return await reading
        except asyncio.CancelledError:
            task = asyncio.current_task()
            if self.stale and not (task is not None and task.cancelling()):
                return None
            raise
        finally:
            self.reading = None

    def _found(self, reply: Any) -> list[tuple[Stream, list[Any]]]:
        """The (stream, entries) of an XREAD reply that brought any."""
        found = []
        for key, entries in reply:
            stream = self.streams.get(codec.text(key) or "")
            if stream is not None and entries:
                found.append((stream, entries))
        return found

    async def _publish(self, stream: Stream, entries: list[Any]) -> bool:
        """Hand one stream's new entries to its subscribers; False when there was a gap instead."""
        # A big batch means a burst: it may have trimmed entries we never read.
        if len(entries) >= GAP_CHECK_BATCH and await self._gap_if_trimmed(stream):
            return False
        # No await from here on: the position moves with the hand-out, and the
        # subscribers that get the batch are the ones asked whether rows are needed.
        rows = any(sub.bodies for sub in stream.subscribers)
        events = [payload(Event.from_entry(i, raw), stream.ref, row=rows) for i, raw in entries]
        stream.fan_out(Batch(stream.ref, events, time.monotonic()).message())
        stream.position = events[-1]["id"]
        return True

    async def _gap_if_trimmed(self, stream: Stream) -> bool:
        """Entries after the stream's position are gone: pages reload, it jumps to the newest."""
        if stream.unreadable or not await was_trimmed(self.client, stream.key, stream.position):
            return False
        stream.position = await newest_id(self.client, stream.key)
        stream.fan_out({"type": "live.gap", "queue": stream.ref, "tip": stream.position})
        return True

    async def _set_aside_unreadable(self, error: ResponseError) -> None:
        for stream in list(self.streams.values()):
            kind = codec.text(await self.client.type(stream.key))
            if kind not in ("stream", "none"):
                stream.unreadable = True
                log.warning("live reader: %s is a %s, not a stream (%s)", stream.key, kind, error)


class PollingReader(StreamReader):
    """The streams of the slots past BLOCKING_SLOTS on a cluster: one XREAD a
    slot a round, without BLOCK, and a pause of POLL_S after an empty round."""

    async def _read_from(self, positions: dict[str, str]) -> list[tuple[Stream, list[Any]]]:
        by_slot: dict[int, dict[str, str]] = {}
        for key, position in positions.items():
            by_slot.setdefault(key_slot(key.encode()), {})[key] = position
        pipe = self.client.pipeline(transaction=False)
        for of_slot in by_slot.values():
            pipe.xread(of_slot, count=READ_BATCH)  # type: ignore[arg-type]
        found = [each for reply in await pipe.execute() for each in self._found(reply or ())]
        if not found:
            await self._cut_short_by_changes(asyncio.sleep(POLL_S))
        return found


def current_queues() -> list[str]:
    """Every queue's address in the overview's order (blocking). Another connection
    that does not answer is left out; the default one raises (the hub hears of it)."""
    found: list[str] = []
    for connection in connections.configured():
        try:
            refs = all_queues(get_client(connection.name), connection.name)
        except OUTAGES:
            if connection.name == DEFAULT_CONNECTION:
                raise
            continue
        found.extend(ref.address for ref in refs)
    return found


class StreamHub:
    """One event loop's (one server process's) streams and readers of one Redis
    connection; the default connection's hub also watches the set of queues."""

    def __init__(self, connection: str = DEFAULT_CONNECTION) -> None:
        self.connection = connection  # a configured one (the consumer checks)
        self.streams: dict[str, Stream] = {}  # by queue address
        self.readers: list[StreamReader] = []
        self.reachable = True
        # While unreachable behind Sentinel: what the sentinels are doing about it.
        self.failover: Failover | None = None
        self.status_listeners: set[Callable[[], None]] = set()  # each socket's "tell the page"
        self._probe: asyncio.Task[None] | None = None
        self._client: AsyncRedis | None = None
        self._asking = asyncio.Semaphore(CONTROL_CONNECTIONS)
        # The pages listing the queues, and what they were last told.
        self.queue_listeners: set[Callable[[Message], None]] = set()
        self.queue_watcher: asyncio.Task[None] | None = None
        self.known_queues: list[str] = []
        self.queues_read = False  # known_queues holds the watcher's read

    @property
    def client(self) -> AsyncRedis:
        """Positions, replays and probes: a pool of at most CONTROL_CONNECTIONS."""
        if self._client is None:
            self._client = connect_async(
                redis_url(self.connection),
                max_connections=CONTROL_CONNECTIONS,  # a busy pool makes callers wait
                client_name=CONTROL_CLIENT_NAME,
                socket_timeout=COMMAND_TIMEOUT_S,
                socket_connect_timeout=CONNECT_TIMEOUT_S,
            )
        return self._client

    async def acquire(self, ref: str, subscriber: Subscriber) -> None:
        """``subscriber`` gets every batch of ``ref`` read from when this returns
        (on a Redis error it is not registered)."""
        stream = self.streams.get(ref)
        if stream is None:
            key = QueueRef.from_address(ref).keys.events
            # A concrete start id, fixed before any subscriber replays up to it.
            position = await self.ask(newest_id(self.client, key))
            stream = self.streams.get(ref)  # another socket may have started it meanwhile
            if stream is None:
                stream = self.streams[ref] = Stream(ref, key, position, self._reader_for(key))
                stream.reader.add(stream)
        # No await from here on: a cancelled caller cannot leave the set wrong.
        stream.subscribers.add(subscriber)

    def release(self, ref: str, subscriber: Subscriber) -> None:
        """``subscriber`` gets no more; the last one stops the stream (and an idle reader) now."""
        stream = self.streams.get(ref)
        if stream is None:
            return
        stream.subscribers.discard(subscriber)
        if stream.subscribers:
            return
        del self.streams[ref]
        stream.reader.remove(stream)
        if not stream.reader.streams:
            self.readers.remove(stream.reader)
            stream.reader.task.cancel()

    def _reader_for(self, key: str) -> StreamReader:
        cluster = split_cluster_flag(redis_url(self.connection))[1]
        shard = key_slot(key.encode()) if cluster else 0
        blocking = {reader.shard for reader in self.readers if reader.shard != POLLED}
        if cluster and shard not in blocking and len(blocking) >= BLOCKING_SLOTS:
            shard = POLLED
        mine = [reader for reader in self.readers if reader.shard == shard]
        # The polling reader takes every stream it is given; a blocking one up to
        # STREAMS_PER_READER before another starts.
        roomy = [r for r in mine if shard == POLLED or len(r.streams) < STREAMS_PER_READER]
        if not mine or (not roomy and len(mine) < READERS):
            reader = (PollingReader if shard == POLLED else StreamReader)(self, shard)
            self.readers.append(reader)
            return reader
        return min(roomy or mine, key=lambda reader: len(reader.streams))

    async def ask(self, command: Awaitable[T]) -> T:
        """A Redis command of the live side, at most CONTROL_CONNECTIONS at once
        (a cluster client's pool refuses past its size rather than wait); an
        outage is reported."""
        try:
            async with self._asking:
                return await command
        except OUTAGES:
            self.report(reachable=False)
            raise
        finally:
            if inspect.iscoroutine(command):
                command.close()  # never started (cancelled while waiting): no warning

    # ------------------------------------------------------------ is Redis there

    def report(self, *, reachable: bool) -> None:
        if reachable == self.reachable:
            return
        self.reachable = reachable
        self.failover = None
        log.log(
            logging.INFO if reachable else logging.WARNING,
            "live: Redis %s%s",
            "" if self.connection == DEFAULT_CONNECTION else f"({self.connection}) ",
            "answers again" if reachable else "unreachable",
        )
        if not reachable and self._probe is None:
            self._probe = asyncio.create_task(self._probe_until_back(), name="echomq-live-probe")
        for listener in self.status_listeners:
            listener()

    async def _probe_until_back(self) -> None:
        try:
            while not self.reachable:
                raise_if_cancelled()
                await asyncio.sleep(PROBE_INTERVAL_S)
                try:
                    await self.client.ping()
                except OUTAGES:
                    # Whether the sentinels (if any) are replacing the master.
                    failover = await failing_over_async(self.client)
                    if (failover is None) != (self.failover is None) and not self.reachable:
                        self.failover = failover
                        for listener in self.status_listeners:
                            listener()
                else:
                    self.report(reachable=True)
        finally:
            self._probe = None

    # ------------------------------------------------------------ the set of queues

    def watch_queues(self, listener: Callable[[Message], None]) -> None:
        """One more page listing the queues; the first starts the watcher, and
        ``queues_read`` is true once ``known_queues`` holds them. Each listener
        hears the watcher's first read and every change after it."""
        self.queue_listeners.add(listener)
        if self.queue_watcher is None:
            self.queues_read = False
            self.queue_watcher = asyncio.create_task(
                self._watch_queues(), name="echomq-live:queues"
            )

    def unwatch_queues(self, listener: Callable[[Message], None]) -> None:
        """One page fewer; the last one stops the watcher (synchronous: never cut short)."""
        self.queue_listeners.discard(listener)
        if not self.queue_listeners and self.queue_watcher is not None:
            self.queue_watcher.cancel()
            self.queue_watcher = None

    async def _watch_queues(self) -> None:
        while True:
            raise_if_cancelled()
            try:
                queues = await asyncio.to_thread(current_queues)
                # The first read goes to the pages that asked before it.
                if not self.queues_read or queues != self.known_queues:
                    for listener in list(self.queue_listeners):
                        listener({"type": "live.queues", "queues": queues})
                self.known_queues = queues
                self.queues_read = True
                await asyncio.sleep(WATCH_INTERVAL_S)
            except Exception as exc:
                # Redis down: keep watching once it is back.
                if isinstance(exc, OUTAGES):
                    self.report(reachable=False)
                log.warning("queue watcher: %r; retrying in %.0fs", exc, WATCH_RETRY_S)
                await asyncio.sleep(WATCH_RETRY_S)

    async def close(self) -> None:
        tasks = [reader.task for reader in self.readers] + [self.queue_watcher, self._probe]
        self.readers, self.streams, self.queue_watcher = [], {}, None
        self.queue_listeners.clear()
        for task in tasks:
            if task is not None:
                task.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await task
        if self._client is not None:
            await self._client.aclose()
            self._client = None


_hubs: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, dict[str, StreamHub]] = (
    weakref.WeakKeyDictionary()
)


def get_hub(connection: str = DEFAULT_CONNECTION) -> StreamHub:
    """This event loop's hub of a configured ``connection``."""
    hubs = _hubs.setdefault(asyncio.get_running_loop(), {})
    hub = hubs.get(connection)
    if hub is None:
        hub = hubs[connection] = StreamHub(connection)
    return hub


async def close_hubs() -> None:
    for hub in _hubs.pop(asyncio.get_running_loop(), {}).values():
        await hub.close()
