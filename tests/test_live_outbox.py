"""Sockets that stop reading, against a real daphne: what the server holds for them is bounded.

Daphne's ``send`` never waits, so before dashboard.live.outbox every event
for a socket that did not read piled up in the server (ten such sockets took
daphne from 93 MB to 1 GB). Here, over a real daphne process and raw sockets
with the smallest receive buffer the kernel gives: a socket that stops
reading gets nothing more once its outbox is full and is closed after
STALL_CLOSE_S; one that reads again in time gets a ``gap`` (its page reloads)
and then the live feed; one that always reads gets every event.
"""

from __future__ import annotations

import asyncio
import json
import socket
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from redis import Redis
from websockets.asyncio.client import ClientConnection, connect
from websockets.exceptions import ConnectionClosed
from websockets.typing import Origin

from dashboard.live.outbox import OUTBOX_BYTES, STALL_CLOSE_S
from queues.keys import QueueKeys
from queues.queue import Queue
from tests.e2e.server import DashboardServer, free_port, login_cookie, prepare

QUEUE = "outbox"
MB = 1024 * 1024
EVENTS, EVENT_BYTES = 12_000, 2048  # 24 MB of events


@dataclass
class Client:
    """A socket subscribed to the queue; what it read, once it reads."""

    socket: ClientConnection
    kinds: list[str] = field(default_factory=list)
    ids: list[str] = field(default_factory=list)
    seen: set[tuple[str, str]] = field(default_factory=set)  # (queue, id): ids repeat across queues
    last_id: str | None = None  # the position the server last gave
    told_of_missing: bool = False  # a gap, or events skipped with a refresh
    received: int = 0
    close_code: int | None = None
    reading: asyncio.Task[None] | None = None

    def read(self) -> None:
        """Read from now on, as fast as it can (in the background), until the server closes."""
        sock = self.socket.transport.get_extra_info("socket")
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4 * MB)
        self.reading = asyncio.create_task(self._read())

    async def quiet(self, seconds: float = 2.0) -> None:
        """Until nothing came for ``seconds`` (or the connection ended)."""
        received = -1
        while received != self.received and not (self.reading and self.reading.done()):
            received = self.received
            await asyncio.sleep(seconds)

    async def _read(self) -> None:
        try:
            async for frame in self.socket:
                self.received += len(frame)
                message = json.loads(frame)
                self.kinds.append(message["type"])
                self.ids.extend(event["id"] for event in message.get("events", ()))
                self.seen.update((message["queue"], e["id"]) for e in message.get("events", ()))
                self.last_id = message.get("last_id", self.last_id)
                missing = message["type"] == "gap" or message.get("skipped", 0) > 0
                self.told_of_missing = self.told_of_missing or missing
        except ConnectionClosed:
            pass
        self.close_code = self.socket.close_code


@pytest.fixture
def server(redis_client: Redis, redis_url: str, tmp_path: Path) -> Iterator[DashboardServer]:
    Queue(QUEUE, redis_client).add("seed")  # the queue exists
    daphne = DashboardServer(prepare(redis_url, tmp_path), free_port(), tmp_path / "daphne.log")
    daphne.start()
    yield daphne
    daphne.stop()


def rss(server: DashboardServer) -> int:
    assert server.process is not None
    status = Path(f"/proc/{server.process.pid}/status").read_text()
    return (
        int(next(line for line in status.splitlines() if line.startswith("VmRSS")).split()[1])
        * 1024
    )


async def open_client(
    server: DashboardServer,
    cookie: str,
    *,
    small_buffer: bool,
    queues: tuple[str, ...] = (QUEUE,),
    last_id: str | None = None,
    window: int | None = None,
) -> Client:
    """Subscribed; it reads nothing more until told to (``read``), and then soon
    takes no more frames (a one-message queue). A small receive buffer keeps what
    it was sent in the server instead of the kernel (it also makes reading slow:
    a 4 KB window); ``window`` bounds it at another size."""
    sock = socket.socket()
    if small_buffer or window:  # before connecting: the window is agreed in the handshake
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, window or 4096)
    sock.connect(("127.0.0.1", server.port))
    connection = await connect(
        f"ws://127.0.0.1:{server.port}/ws/live/",
        sock=sock,
        origin=Origin(server.url),
        additional_headers={"Cookie": cookie},
        max_queue=1,
        max_size=None,
        ping_interval=None,
    )
    wanted = [{"queue": f"bull:{queue}", "last_id": last_id} for queue in queues]
    await connection.send(json.dumps({"type": "subscribe", "queues": wanted}))
    assert json.loads(await connection.recv())["type"] == "subscribed"
    return Client(connection)


def produce(redis: Redis) -> list[str]:
    padding = "x" * EVENT_BYTES
    ids: list[str] = []
    for start in range(0, EVENTS, 500):
        with redis.pipeline(transaction=False) as pipe:
            for n in range(start, start + 500):
                pipe.xadd(
                    QueueKeys(QUEUE).events, {"event": "progress", "jobId": str(n), "data": padding}
                )
            ids.extend(i.decode() for i in pipe.execute())
    return ids


def fill_queues(redis: Redis, count: int, events: int) -> tuple[str, ...]:
    """``count`` queues whose streams hold ``events`` events of 2 KB each."""
    names = tuple(f"backlog-{n}" for n in range(count))
    for name in names:
        Queue(name, redis).add("seed")
        with redis.pipeline(transaction=False) as pipe:
            for n in range(events):
                pipe.xadd(
                    QueueKeys(name).events,
                    {"event": "progress", "jobId": str(n), "data": "x" * EVENT_BYTES},
                )
            pipe.execute()
    return names


async def test_a_socket_that_never_reads_is_closed_and_what_it_was_sent_goes_with_it(
    server: DashboardServer, redis_client: Redis
) -> None:
    """Replays of 50 queues (50 messages of about 115 KB, 6 MB: more than the
    kernel's buffers take) to sockets that do not read: each is closed
    STALL_CLOSE_S after its outbox filled, having been sent a fraction of it.
    Before, daphne kept all of it for them, open."""
    queues = await asyncio.to_thread(fill_queues, redis_client, 50, 400)
    cookie = await asyncio.to_thread(login_cookie, server.url)
    stalled = [
        await open_client(server, cookie, small_buffer=True, queues=queues, last_id="0-0")
        for _ in range(3)
    ]
    reader = await open_client(server, cookie, small_buffer=False, queues=queues, last_id="0-0")
    reader.read()
    in_streams = sum(redis_client.xlen(QueueKeys(name).events) for name in queues)
    started = time.monotonic()
    while len(reader.ids) < in_streams and time.monotonic() - started < 30:
        await asyncio.sleep(0.1)
    assert len(reader.ids) == len(reader.seen) == in_streams  # each event once
    await asyncio.sleep(STALL_CLOSE_S + 5 - (time.monotonic() - started))
    for client in stalled:
        client.read()
    for client in stalled:
        assert client.reading is not None
        await asyncio.wait_for(client.reading, 10)  # the server has ended it
        assert client.received < 4 * MB + 2 * OUTBOX_BYTES, client.received
    assert reader.close_code is None
    await reader.socket.close()


async def test_sockets_that_stop_reading_in_a_burst_hold_little_and_the_rest_keep_their_feed(
    server: DashboardServer, redis_client: Redis
) -> None:
    cookie = await asyncio.to_thread(login_cookie, server.url)
    reader = await open_client(server, cookie, small_buffer=False)
    reader.read()
    stalled = [await open_client(server, cookie, small_buffer=True) for _ in range(4)]
    # Reads again in time. Its 64 KB window keeps the kernel's buffers from
    # taking the whole burst (12,000 events are about 2.3 MB of frames, which
    # an autotuned window could hold): the rest waits in its outbox.
    late = await open_client(server, cookie, small_buffer=False, window=64 * 1024)
    baseline = rss(server)
    stalled_at = time.monotonic()

    produced = await asyncio.to_thread(produce, redis_client)
    peak = baseline
    while reader.last_id != produced[-1] and time.monotonic() - stalled_at < 60:
        peak = max(peak, rss(server))
        await asyncio.sleep(0.1)
    # The reading socket kept up; on a busy machine it may have been told to
    # reload instead of getting some events, never left without word.
    assert reader.last_id == produced[-1]
    assert reader.ids == produced or reader.told_of_missing
    sent_by = time.monotonic()  # every outbox that was to fill is full by now

    late.read()
    await asyncio.sleep(1)
    last = redis_client.xadd(QueueKeys(QUEUE).events, {"event": "added", "jobId": "after"})
    for _ in range(50):
        if late.ids and late.ids[-1] == last.decode():
            break
        await asyncio.sleep(0.1)
    assert late.told_of_missing, "the late reader was not told it missed events"
    assert late.ids[-1] == last.decode(), "the late reader did not get the live feed back"
    assert late.received < 10 * MB
    assert late.close_code is None

    # The others never read. Reading now, each gets what was left in the
    # kernel's buffers and its outbox, a fraction of the 24 MB (closed, if its
    # outbox filled; on a busy machine the server, itself behind, may have
    # sent them only hints).
    await asyncio.sleep(max(0.0, STALL_CLOSE_S + 3 - (time.monotonic() - sent_by)))
    for client in stalled:
        client.read()
    for client in stalled:
        await client.quiet()
        assert client.received < 4 * MB + 2 * OUTBOX_BYTES, client.received
    growth = peak - baseline
    assert growth < 50 * MB, (
        f"daphne grew {growth / MB:.0f} MB for {len(stalled) + 1} stalled sockets"
    )
    await reader.socket.close()
    await late.socket.close()
