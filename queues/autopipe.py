"""One Redis connection shared by many coroutines, pipelined automatically.

A busy worker has up to ``concurrency`` script calls in flight. Sent through a
connection pool, each costs its own write and read syscalls, and redis-py's
asyncio client packs commands in Python. Here every command issued during one
event-loop turn is packed by hiredis, written with a single syscall, and the
replies, which Redis sends back in order, are parsed by hiredis as they
arrive and handed to the waiting coroutines.

Only plain TCP and unix-socket servers are supported (no TLS, no cluster):
:meth:`AutoPipeline.for_client` answers ``None`` for anything else and callers
keep using the redis-py client they already have.
"""

from __future__ import annotations

import asyncio
from collections import deque
from typing import Any

import hiredis
from redis.asyncio import Redis as AsyncRedis
from redis.asyncio.connection import Connection, UnixDomainSocketConnection
from redis.exceptions import ConnectionError as RedisConnectionError
from redis.exceptions import ResponseError

from queues.connection import is_cluster
from queues.scripts import ScriptCall

_NOSCRIPT = "NOSCRIPT"


class AutoPipeline(asyncio.Protocol):
    def __init__(
        self,
        *,
        host: str = "127.0.0.1",
        port: int = 6379,
        path: str | None = None,
        db: int = 0,
        username: str | None = None,
        password: str | None = None,
    ) -> None:
        self._address = (host, port, path)
        self._handshake: list[tuple[Any, ...]] = []
        if password is not None:
            auth = ("AUTH", username, password) if username else ("AUTH", password)
            self._handshake.append(auth)
        if db:
            self._handshake.append(("SELECT", db))
        self._transport: asyncio.Transport | None = None
        # Set once the handshake is queued: commands sent earlier would run
        # before AUTH / SELECT.
        self._ready = False
        self._reader = hiredis.Reader(replyError=ResponseError)
        self._waiting: deque[asyncio.Future[Any]] = deque()
        self._outgoing: list[bytes] = []
        self._flush_scheduled = False
        self._connecting: asyncio.Lock | None = None
        self._closed = False

    @classmethod
    def for_client(cls, client: AsyncRedis) -> AutoPipeline | None:
        """A pipeline to the server ``client`` talks to, if it is a plain one."""
        if is_cluster(client):
            return None
        kwargs: dict[str, Any] = client.connection_pool.connection_kwargs
        kind = client.connection_pool.connection_class
        db = int(kwargs.get("db") or 0)
        username, password = kwargs.get("username"), kwargs.get("password")
        if kind is UnixDomainSocketConnection:
            return cls(path=str(kwargs["path"]), db=db, username=username, password=password)
        if kind is Connection:
            host = str(kwargs.get("host") or "localhost")
            port = int(kwargs.get("port") or 6379)
            return cls(host=host, port=port, db=db, username=username, password=password)
        return None  # TLS or a custom connection class: leave it to redis-py

    # -- asyncio.Protocol ---------------------------------------------------

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.Transport)
        self._transport = transport

    def data_received(self, data: bytes) -> None:
        reader = self._reader
        reader.feed(data)
        waiting = self._waiting
        reply = reader.gets()
        while reply is not False:
            future = waiting.popleft()
            if not future.done():  # a caller cancelled meanwhile: drop its reply
                future.set_result(reply)
            reply = reader.gets()

    def connection_lost(self, exc: Exception | None) -> None:
        self._transport = None
        self._ready = False
        self._reader = hiredis.Reader(replyError=ResponseError)
        self._outgoing.clear()
        waiting, self._waiting = self._waiting, deque()
        for future in waiting:
            if not future.done():
                future.set_exception(RedisConnectionError(f"connection to Redis lost: {exc}"))

    # -- sending --------------------------------------------------------------

    async def execute(self, *args: Any) -> Any:
        """Send one command; its reply, with error replies raised as ResponseError."""
        if not self._ready:
            await self._connect()
        reply = await self._send(hiredis.pack_command(args))
        if isinstance(reply, ResponseError):
            raise reply
        return reply

    async def run(self, call: ScriptCall) -> Any:
        """Run a built script call (EVALSHA, then EVAL when the server lacks it)."""
        if not self._ready:
            await self._connect()
        keys = call.keys
        command: Any = ("EVALSHA", call.script.sha, len(keys), *keys, *call.args)
        reply = await self._send(hiredis.pack_command(command))
        if isinstance(reply, ResponseError):
            if not str(reply).startswith(_NOSCRIPT):
                raise reply
            return await self.execute("EVAL", call.script.source, len(keys), *keys, *call.args)
        return reply

    def _send(self, packed: bytes) -> asyncio.Future[Any]:
        if self._transport is None:
            raise RedisConnectionError("not connected to Redis")
        future = asyncio.get_running_loop().create_future()
        self._waiting.append(future)
        self._outgoing.append(packed)
        if not self._flush_scheduled:
            # Everything sent before the loop runs again goes out in one write.
            self._flush_scheduled = True
            asyncio.get_running_loop().call_soon(self._flush)
        return future

    def _flush(self) -> None:
        self._flush_scheduled = False
        if self._transport is not None and self._outgoing:
            self._transport.write(b"".join(self._outgoing))
        self._outgoing.clear()

    async def _connect(self) -> None:
        if self._closed:
            raise RedisConnectionError("the pipeline is closed")
        if self._connecting is None:
            self._connecting = asyncio.Lock()
        async with self._connecting:
            if self._ready:
                return
            loop = asyncio.get_running_loop()
            host, port, path = self._address
            try:
                if path is not None:
                    await loop.create_unix_connection(lambda: self, path)
                else:
                    await loop.create_connection(lambda: self, host, port)
            except OSError as exc:
                raise RedisConnectionError(f"cannot connect to Redis: {exc}") from exc
            replies = [self._send(hiredis.pack_command(command)) for command in self._handshake]
            self._ready = True
            for reply in replies:
                if isinstance(await reply, ResponseError):
                    await self.close()
                    raise RedisConnectionError(f"Redis refused the handshake: {reply.result()}")

    async def close(self) -> None:
        self._closed = True
        self._ready = False
        if self._transport is not None:
            self._transport.close()
            self._transport = None
