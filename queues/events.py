"""The events stream of a queue: one entry per lifecycle event.

``Event.from_entry`` decodes one XREAD/XRANGE entry tolerantly (any writer,
any version). The live reader (``QueueEvents``) builds on it.
"""

from __future__ import annotations

import asyncio
from collections import deque
from dataclasses import dataclass, field
from typing import Any

from redis.asyncio import Redis as AsyncRedis

from queues import codec
from queues.keys import DEFAULT_PREFIX, QueueKeys


@dataclass(frozen=True, slots=True)
class Event:
    stream_id: str  # "<ms>-<seq>", the resume point
    event: str
    job_id: str | None = None
    fields: dict[str, str] = field(default_factory=dict)

    @property
    def timestamp_ms(self) -> int:
        return codec.integer(self.stream_id.split("-", 1)[0], 0) or 0

    @classmethod
    def from_entry(cls, stream_id: bytes | str, raw: dict[bytes, bytes] | dict[str, str]) -> Event:
        fields = {codec.text(k) or "": codec.text(v) or "" for k, v in raw.items()}
        name = fields.pop("event", "")
        return cls(codec.text(stream_id) or "", name, fields.pop("jobId", None), fields)


class QueueEvents:
    """Lifecycle events of one queue, read live with XREAD BLOCK.

    ``async for event in QueueEvents("emails", client=aredis): ...`` yields
    :class:`Event` objects in stream order. ``last_id`` is the id of the last
    event handed out: pass it back as ``last_id`` to resume exactly after it.
    ``"$"`` starts with the events added from now on, ``"0"`` with the oldest
    one still in the stream. ``close()`` ends the iteration promptly, also when
    a read is blocked waiting for events.
    """

    def __init__(
        self,
        queue_name: str,
        *,
        client: AsyncRedis,
        prefix: str = DEFAULT_PREFIX,
        last_id: str = "$",
        block_ms: int = 5000,
        batch: int = 100,
    ) -> None:
        self.keys = QueueKeys(queue_name, prefix)
        self.last_id = last_id
        self._client = client
        self._block_ms = block_ms
        self._batch = batch
        self._buffer: deque[Event] = deque()
        self._read: asyncio.Task[Any] | None = None
        self._closed = False

    def __aiter__(self) -> QueueEvents:
        return self

    async def __anext__(self) -> Event:
        while not self._buffer:
            if self._closed:
                raise StopAsyncIteration
            if self.last_id == "$":
                # Pin "$" to a concrete id once: XREAD with "$" on every call
                # would drop whatever arrived between two reads.
                self.last_id = await self._current_last_id()
            self._read = asyncio.ensure_future(
                self._client.xread(
                    {self.keys.events: self.last_id}, count=self._batch, block=self._block_ms
                )
            )
            try:
                reply = await self._read
            except asyncio.CancelledError:
                if self._closed:
                    raise StopAsyncIteration from None
                raise
            finally:
                self._read = None
            for _stream, entries in reply or ():
                for stream_id, raw in entries:
                    self._buffer.append(Event.from_entry(stream_id, raw))
        event = self._buffer.popleft()
        self.last_id = event.stream_id
        return event

    @property
    def buffered(self) -> int:
        """Events already read and not yet handed out (next ones need no round trip)."""
        return len(self._buffer)

    async def _current_last_id(self) -> str:
        newest = await self._client.xrevrange(self.keys.events, count=1)
        return codec.text(newest[0][0]) or "0-0" if newest else "0-0"

    async def close(self) -> None:
        """Stop iterating; a blocked read is cancelled. The client stays open."""
        self._closed = True
        self._buffer.clear()
        if self._read is not None:
            self._read.cancel()
