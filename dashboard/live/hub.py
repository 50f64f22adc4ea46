"""One events-stream reader per (prefix, queue) per server process.

Every page subscribed to a queue in this process shares one reader: an asyncio
task that XREADs BLOCK the queue's events stream and group_sends each batch to
a channel-layer group. A thousand tabs cost one blocking read per queue, not a
thousand. The reader starts with its first subscriber and stops with its last.

Group names are per process (``echomq.<hash of the queue>.<process token>``):
each process's reader feeds only the consumers of that process, so with several
server processes on one channel layer no page receives an event twice. The
hash keeps any queue name within the ``^[a-zA-Z0-9._-]{1,99}$`` Channels
accepts.

A reader that may have missed entries (its connection dropped, or one read
brought a burst big enough to have trimmed unread entries) checks whether the
stream still holds what follows its position; when it does not, it sends
``live.gap`` and continues from the newest entry, and pages reload.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import logging
import time
import uuid
import weakref
from dataclasses import dataclass, field
from typing import Any

from channels.layers import get_channel_layer
from redis.asyncio import Redis as AsyncRedis
from redis.asyncio.retry import Retry
from redis.backoff import NoBackoff
from redis.exceptions import RedisError

from dashboard.live.discovery import QueueSetWatcher
from dashboard.live.streams import EventPayload, newest_id, payload, was_trimmed
from dashboard.redis import redis_url
from queues.connection import connect_async
from queues.events import QueueEvents
from queues.inspect import QueueRef

log = logging.getLogger("echomq.live")

READ_BATCH = 500  # events per XREAD, and at most per group message
# At most one group message per queue every coalescing window: a lone event
# goes out at once, a busy stream in batches. The window grows with the
# subscribers, since each message costs every socket (and every browser) it
# reaches: 10 ms for a few pages, 20 ms from 7 on (at most 50 messages/s), so
# an event waits 10 ms on average. A 30 ms window was measured too
# (bench/live.py, 20 pages): the pages used no less CPU, because a page pays
# mostly per row drawn rather than per message, and every event waited longer.
COALESCE_PER_SUBSCRIBER_S = 0.003
COALESCE_RANGE_S = (0.01, 0.02)
GAP_CHECK_BATCH = 100  # a read this big may follow a trim: check for a gap
BLOCK_MS = 5000
RETRY_DELAYS_S = (0.1, 0.2, 0.5, 1.0, 2.0, 5.0)
POSITION_TIMEOUT_S = 10.0
CLIENT_NAME = "echomq-live"


def group_name(ref: str, process_token: str) -> str:
    digest = hashlib.sha256(ref.encode()).hexdigest()[:32]
    return f"echomq.{digest}.{process_token}"


@dataclass
class StreamReader:
    """The reading task of one queue; ``subscribers`` counts the consumers using it."""

    ref: str
    group: str
    client: AsyncRedis
    subscribers: int = 0
    positioned: asyncio.Event = field(default_factory=asyncio.Event)
    task: asyncio.Task[None] | None = None
    events: QueueEvents | None = None

    def start(self) -> None:
        self.task = asyncio.create_task(self._run(), name=f"echomq-live:{self.ref}")

    def coalescing_window(self) -> float:
        low, high = COALESCE_RANGE_S
        return min(high, max(low, self.subscribers * COALESCE_PER_SUBSCRIBER_S))

    async def stop(self) -> None:
        if self.events is not None:
            await self.events.close()
        if self.task is not None:
            self.task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self.task

    async def _run(self) -> None:
        keys = QueueRef.parse(self.ref).keys
        events = self.events = QueueEvents(
            keys.name, client=self.client, prefix=keys.prefix, block_ms=BLOCK_MS, batch=READ_BATCH
        )
        layer = get_channel_layer()
        failures = 0
        sent_at = 0.0
        while True:
            try:
                if not self.positioned.is_set():
                    # A concrete start id, fixed before any subscriber replays up to it.
                    events.last_id = await newest_id(self.client, keys.events)
                    self.positioned.set()
                if failures:
                    # Entries may have been trimmed while Redis was unreachable.
                    await self._gap_if_trimmed(layer, events, events.last_id)
                failures = 0
                wait = sent_at + self.coalescing_window() - time.monotonic()
                if wait > 0:
                    await asyncio.sleep(wait)
                before = events.last_id
                batch = await _next_batch(events)
                if batch is None:
                    return
                # A big batch means a burst: it may have trimmed entries we never read.
                if len(batch) >= GAP_CHECK_BATCH and await self._gap_if_trimmed(
                    layer, events, before
                ):
                    continue
                sent_at = time.monotonic()
                await layer.group_send(
                    self.group,
                    {
                        "type": "live.events",
                        "queue": self.ref,
                        "events": batch,
                        "sent_at": sent_at,  # same process as every consumer
                    },
                )
            except Exception as exc:
                # Redis down, a bad entry, a layer hiccup: keep the reader alive, resume in place.
                delay = RETRY_DELAYS_S[min(failures, len(RETRY_DELAYS_S) - 1)]
                failures += 1
                level = logging.WARNING if isinstance(exc, RedisError | OSError) else logging.ERROR
                log.log(level, "live reader %s: %r; retrying in %.1fs", self.ref, exc, delay)
                await asyncio.sleep(delay)

    async def _gap_if_trimmed(self, layer: Any, events: QueueEvents, position: str) -> bool:
        """Entries after ``position`` are gone: pages reload, the reader jumps to the newest."""
        keys = events.keys
        if not await was_trimmed(self.client, keys.events, position):
            return False
        events.last_id = await newest_id(self.client, keys.events)
        await layer.group_send(
            self.group, {"type": "live.gap", "queue": self.ref, "tip": events.last_id}
        )
        return True


async def _next_batch(events: QueueEvents) -> list[EventPayload] | None:
    """The next event plus every one already buffered behind it (one group message)."""
    try:
        first = await anext(events)
    except StopAsyncIteration:
        return None
    batch = [payload(first)]
    while events.buffered and len(batch) < READ_BATCH:
        batch.append(payload(await anext(events)))
    return batch


class StreamHub:
    """The readers and the queue-set watcher of one event loop (one server process),
    each counted by its subscribers."""

    def __init__(self) -> None:
        self.token = uuid.uuid4().hex[:16]
        self.readers: dict[str, StreamReader] = {}
        self.queue_watcher: QueueSetWatcher | None = None
        self._client: AsyncRedis | None = None

    @property
    def client(self) -> AsyncRedis:
        if self._client is None:
            # Named, so CLIENT LIST shows which connections are live readers. No
            # silent retries: a reader must see a dropped connection, because
            # entries may be trimmed before it reads again (it then checks).
            self._client = connect_async(
                redis_url(), client_name=CLIENT_NAME, retry=Retry(NoBackoff(), 0)
            )
        return self._client

    async def acquire(self, ref: str) -> str:
        """Count one more subscriber of ``ref``; returns its group once the reader is positioned."""
        reader = self.readers.get(ref)
        if reader is None:
            reader = StreamReader(ref, group_name(ref, self.token), self.client)
            self.readers[ref] = reader
            reader.start()
        reader.subscribers += 1
        try:
            await asyncio.wait_for(reader.positioned.wait(), POSITION_TIMEOUT_S)
        except TimeoutError:
            await self.release(ref)
            raise
        return reader.group

    async def release(self, ref: str) -> None:
        reader = self.readers.get(ref)
        if reader is None:
            return
        reader.subscribers -= 1
        if reader.subscribers <= 0:
            del self.readers[ref]
            await reader.stop()

    async def watch_queues(self) -> QueueSetWatcher:
        """Count one more page listing the queues; the watcher starts with the first."""
        watcher = self.queue_watcher
        if watcher is None:
            watcher = self.queue_watcher = QueueSetWatcher(f"echomq.queues.{self.token}")
            watcher.start()
        watcher.watchers += 1
        return watcher

    async def unwatch_queues(self) -> None:
        watcher = self.queue_watcher
        if watcher is None:
            return
        watcher.watchers -= 1
        if watcher.watchers <= 0:
            self.queue_watcher = None
            await watcher.stop()

    async def close(self) -> None:
        readers, self.readers = list(self.readers.values()), {}
        for reader in readers:
            await reader.stop()
        if self.queue_watcher is not None:
            watcher, self.queue_watcher = self.queue_watcher, None
            await watcher.stop()
        if self._client is not None:
            await self._client.aclose()
            self._client = None


_hubs: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, StreamHub] = weakref.WeakKeyDictionary()


def get_hub() -> StreamHub:
    """This event loop's hub (a server process has one loop; tests get one per test)."""
    loop = asyncio.get_running_loop()
    hub = _hubs.get(loop)
    if hub is None:
        hub = _hubs[loop] = StreamHub()
    return hub
