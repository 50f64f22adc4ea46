"""One Redis connection shared by many coroutines, pipelined automatically.

A busy worker has up to ``concurrency`` script calls in flight. Sent through a
connection pool, each costs its own write and read syscalls, and redis-py's
asyncio client packs commands in Python. Here every command issued during one
event-loop turn is packed by hiredis, written with a single syscall, and the
replies, which Redis sends back in order, are parsed by hiredis as they
arrive and handed to the waiting coroutines.

Plain TCP and unix-socket servers are supported, Redis Cluster when every
key a caller sends hashes to one slot (a queue with a ``{hash-tag}`` prefix):
the pipeline then talks to the node owning that slot, found through the
cluster client, and follows a MOVED answer to the new owner; and Redis
Sentinel: the pipeline asks the client's sentinels for the master on every
connect, and drops a connection that answers READONLY (a master demoted by a
failover), so it never writes to a replica. Anything else (TLS, custom
connection classes) gets ``None`` from :meth:`AutoPipeline.for_client`, and
callers keep using their redis-py client.
"""

from __future__ import annotations

import asyncio
from collections import deque
from collections.abc import Awaitable, Callable
from typing import Any

import hiredis
from redis.asyncio import Redis as AsyncRedis
from redis.asyncio.cluster import RedisCluster as AsyncRedisCluster
from redis.asyncio.connection import Connection, UnixDomainSocketConnection
from redis.asyncio.sentinel import SentinelConnectionPool, SentinelManagedConnection
from redis.exceptions import ConnectionError as RedisConnectionError
from redis.exceptions import ResponseError

from queues import scripts
from queues.scripts import ScriptCall

_NOSCRIPT = "NOSCRIPT"
_MOVED = "MOVED "
_READONLY = "READONLY"

# Finds (host, port) of the cluster node owning the pipeline's slot.
Locator = Callable[[], Awaitable[tuple[str, int]]]


class _Link(asyncio.Protocol):
    """One connection: its transport, its reply parser, the callers waiting for
    replies in the order their commands were written, and what is not yet
    written. A new connection is a new link, so a late event from an old
    connection can only touch the callers that were waiting on it."""

    def __init__(self) -> None:
        self.transport: asyncio.Transport | None = None
        self.reader = hiredis.Reader(replyError=ResponseError)
        self.waiting: deque[asyncio.Future[Any]] = deque()
        self.outgoing: list[bytes] = []
        self.flush_scheduled = False
        self.lost = False

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.Transport)
        self.transport = transport

    def data_received(self, data: bytes) -> None:
        reader = self.reader
        reader.feed(data)
        waiting = self.waiting
        reply = reader.gets()
        while reply is not False:
            future = waiting.popleft()
            if not future.done():  # a caller cancelled meanwhile: drop its reply
                future.set_result(reply)
            reply = reader.gets()

    def connection_lost(self, exc: Exception | None) -> None:
        self.lost = True
        self.transport = None
        self.outgoing.clear()
        waiting, self.waiting = self.waiting, deque()
        for future in waiting:
            if not future.done():
                future.set_exception(RedisConnectionError(f"connection to Redis lost: {exc}"))

    def send(self, packed: bytes) -> asyncio.Future[Any]:
        if self.transport is None:
            raise RedisConnectionError("not connected to Redis")
        loop = asyncio.get_running_loop()
        future = loop.create_future()
        self.waiting.append(future)
        self.outgoing.append(packed)
        if not self.flush_scheduled:
            # Everything sent before the loop runs again goes out in one write.
            self.flush_scheduled = True
            loop.call_soon(self.flush)
        return future

    def flush(self) -> None:
        self.flush_scheduled = False
        if self.transport is not None and self.outgoing:
            self.transport.write(b"".join(self.outgoing))
        self.outgoing.clear()

    def close(self) -> None:
        if self.transport is not None:
            self.transport.close()


class AutoPipeline:
    def __init__(
        self,
        *,
        host: str = "127.0.0.1",
        port: int = 6379,
        path: str | None = None,
        db: int = 0,
        username: str | None = None,
        password: str | None = None,
        locate: Locator | None = None,
        client_name: str | None = None,
    ) -> None:
        self._address = (host, port, path)
        self._locate = locate
        self._handshake: list[tuple[Any, ...]] = []
        if password is not None:
            auth = ("AUTH", username, password) if username else ("AUTH", password)
            self._handshake.append(auth)
        if db:
            self._handshake.append(("SELECT", db))
        if client_name:
            # Named like the worker's other connections, so CLIENT LIST shows
            # the worker (queues.connection_names); set again on every reconnect.
            self._handshake.append(("CLIENT", "SETNAME", client_name))
        # Set once the link's handshake is queued: commands sent earlier would
        # run before AUTH / SELECT.
        self._link: _Link | None = None
        self._connecting: asyncio.Lock | None = None
        self._closed = False
        # Set by a MOVED answer: the next connect goes where it said.
        self._moved = False

    @classmethod
    def for_client(
        cls, client: AsyncRedis, *, slot_key: str = "", client_name: str | None = None
    ) -> AutoPipeline | None:
        """A pipeline to the server ``client`` talks to, if it is a plain one; for a
        cluster client, to the node owning ``slot_key`` (required then). Its
        connection is named ``client_name`` (CLIENT SETNAME) when one is given."""
        if isinstance(client, AsyncRedisCluster):
            return cls._for_cluster(client, slot_key, client_name) if slot_key else None
        if isinstance(client.connection_pool, SentinelConnectionPool):
            return cls._for_sentinel(client.connection_pool, client_name)
        kwargs: dict[str, Any] = client.connection_pool.connection_kwargs
        kind = client.connection_pool.connection_class
        db = int(kwargs.get("db") or 0)
        username, password = kwargs.get("username"), kwargs.get("password")
        auth: dict[str, Any] = {
            "username": username,
            "password": password,
            "client_name": client_name,
        }
        if kind is UnixDomainSocketConnection:
            return cls(path=str(kwargs["path"]), db=db, **auth)
        if kind is Connection:
            host = str(kwargs.get("host") or "localhost")
            port = int(kwargs.get("port") or 6379)
            return cls(host=host, port=port, db=db, **auth)
        return None  # TLS or a custom connection class: leave it to redis-py

    @classmethod
    def _for_cluster(
        cls, client: AsyncRedisCluster, slot_key: str, client_name: str | None
    ) -> AutoPipeline | None:
        kwargs = client.get_connection_kwargs()
        if kwargs.get("connection_class", Connection) is not Connection:
            return None  # TLS nodes: leave it to redis-py

        async def locate() -> tuple[str, int]:
            await client.initialize()  # a no-op once the slot map is loaded
            node = client.get_node_from_key(slot_key)
            if node is None:
                raise RedisConnectionError(f"no cluster node serves {slot_key!r}")
            return node.host, int(node.port)

        username, password = kwargs.get("username"), kwargs.get("password")
        return cls(username=username, password=password, locate=locate, client_name=client_name)

    @classmethod
    def _for_sentinel(
        cls, pool: SentinelConnectionPool, client_name: str | None
    ) -> AutoPipeline | None:
        if pool.connection_class is not SentinelManagedConnection:
            return None  # TLS: leave it to redis-py

        async def locate() -> tuple[str, int]:
            # The sentinels' answer, asked anew on every connect: after a
            # failover it names the new master.
            host, port = await pool.get_master_address()
            return str(host), int(port)

        kwargs = pool.connection_kwargs
        return cls(
            db=int(kwargs.get("db") or 0),
            username=kwargs.get("username"),
            password=kwargs.get("password"),
            locate=locate,
            client_name=client_name,
        )

    # -- sending --------------------------------------------------------------

    async def execute(self, *args: Any) -> Any:
        """Send one command; its reply, with error replies raised as ResponseError."""
        link = self._link
        if link is None or link.lost:
            link = await self._connect()
        reply = await link.send(hiredis.pack_command(args))
        if isinstance(reply, ResponseError):
            if self._follow_moved(reply):
                return await self.execute(*args)
            self._drop_if_demoted(reply)
            raise reply
        return reply

    async def run(self, call: ScriptCall) -> Any:
        """Run a built script call (EVALSHA, then EVAL when the server lacks it)."""
        link = self._link
        if link is None or link.lost:
            link = await self._connect()
        keys = call.keys
        sha, source = scripts.code(call.script)
        command: Any = ("EVALSHA", sha, len(keys), *keys, *call.args)
        reply = await link.send(hiredis.pack_command(command))
        if isinstance(reply, ResponseError):
            if self._follow_moved(reply):
                return await self.run(call)
            self._drop_if_demoted(reply)
            if not str(reply).startswith(_NOSCRIPT):
                raise reply
            try:
                return await self.execute("EVAL", source, len(keys), *keys, *call.args)
            except ResponseError as error:
                if scripts.fell_back_to_legacy(error, call.script):
                    return await self.run(call)
                raise
        return reply

    def _follow_moved(self, reply: ResponseError) -> bool:
        """A cluster slot changed owner: reconnect to the node named in the
        answer (the caller resends). Commands in flight on the old connection
        fail with a connection error."""
        message = str(reply)
        if self._locate is None or not message.startswith(_MOVED):
            return False
        host, _, port = message.split()[-1].rpartition(":")
        self._address = (host or self._address[0], int(port), None)
        self._moved = True
        if self._link is not None:
            self._link.close()
            self._link = None
        return True

    def _drop_if_demoted(self, reply: ResponseError) -> None:
        """READONLY: the server is a replica now (a failover demoted it). The
        connection is dropped and the caller told Redis went away, so it
        tries again; the next connect asks the sentinels for the master."""
        if self._locate is None or not str(reply).startswith(_READONLY):
            return
        if self._link is not None:
            self._link.close()
            self._link = None
        raise RedisConnectionError(f"the server is no longer the master: {reply}")

    async def _connect(self) -> _Link:
        if self._closed:
            raise RedisConnectionError("the pipeline is closed")
        if self._connecting is None:
            self._connecting = asyncio.Lock()
        async with self._connecting:
            if self._link is not None and not self._link.lost:
                return self._link
            loop = asyncio.get_running_loop()
            if self._locate is not None and not self._moved:
                # Ask the cluster client again on every connect: after a
                # failover the slot's owner is another node.
                self._address = (*await self._locate(), None)
            self._moved = False
            host, port, path = self._address
            link = _Link()
            try:
                if path is not None:
                    await loop.create_unix_connection(lambda: link, path)
                else:
                    await loop.create_connection(lambda: link, host, port)
            except OSError as exc:
                raise RedisConnectionError(f"cannot connect to Redis: {exc}") from exc
            # Queued before anyone else can use the link, so they run first.
            replies = [link.send(hiredis.pack_command(command)) for command in self._handshake]
            self._link = link
            for reply in replies:
                if isinstance(await reply, ResponseError):
                    await self.close()
                    raise RedisConnectionError(f"Redis refused the handshake: {reply.result()}")
            return link

    async def close(self) -> None:
        self._closed = True
        if self._link is not None:
            self._link.close()
            self._link = None
