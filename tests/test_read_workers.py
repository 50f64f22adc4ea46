"""Connected workers, read with CLIENT LIST (queues.read.workers), against a
real Redis with bullmq 2.20.1's workers and ours connected."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, contextmanager
from typing import Any

import pytest
from bullmq import Queue as BullQueue
from bullmq import Worker as BullWorker
from redis import Redis

from queues.connection import connect
from queues.connection_names import queue_name_forms
from queues.job import Job
from queues.read.refs import QueueRef
from queues.read.workers import (
    UNIX_SOCKET_HOST,
    parse_client_list,
    queue_workers,
    read_client_list,
    worker_counts,
    workers_by_queue,
)
from tests.worker_helpers import running, until

EMAILS = QueueRef("bull", "emails")
PEER_OPTS = {"drainDelay": 1}


async def _nothing(job: Job) -> None:
    return None


async def _peer_nothing(job: Any, token: str) -> None:
    return None


@asynccontextmanager
async def bullmq_worker(redis_url: str, queue: str, **opts: Any) -> AsyncIterator[BullWorker]:
    worker = BullWorker(queue, _peer_nothing, {"connection": redis_url, **PEER_OPTS, **opts})
    try:
        yield worker
    finally:
        await worker.close()


@contextmanager
def named_connections(redis_url: str, *names: str) -> Iterator[list[Redis]]:
    """Open connections named ``names`` (CLIENT SETNAME), for the test's length."""
    clients = [Redis.from_url(redis_url, client_name=name) for name in names]
    for client in clients:
        client.ping()
    try:
        yield clients
    finally:
        for client in clients:
            client.close()


def _workers(client: Redis, ref: QueueRef = EMAILS) -> list[Any]:
    workers, clients = queue_workers(client, ref)
    assert clients.known, clients.error
    assert workers is not None
    return workers


async def _until_workers(client: Redis, count: int, ref: QueueRef = EMAILS) -> list[Any]:
    await until(lambda: len(_workers(client, ref)) == count)
    return _workers(client, ref)


async def test_bullmq_workers_connected_while_reading_are_listed_as_bullmq_lists_them(
    redis_url: str, redis_client: Redis
) -> None:
    async with (
        bullmq_worker(redis_url, "emails", name="mailer-1"),
        bullmq_worker(redis_url, "emails"),
    ):
        await _until_workers(redis_client, 2)
        # bullmq names its blocking connection a moment after its first one.
        await until(lambda: [w.connections for w in _workers(redis_client)] == [2, 2])
        workers = _workers(redis_client)
        peer = BullQueue("emails", {"connection": redis_url})
        try:
            theirs = await peer.get_workers()
        finally:
            await peer.close()
    by_name = {worker.name: worker for worker in workers}
    assert set(by_name) == {"mailer-1", ""}
    assert by_name["mailer-1"].connection_name == "bull:emails:w:mailer-1"
    assert by_name[""].connection_name == "bull:emails"
    # Each bullmq worker holds two connections (client and blocking client).
    assert [by_name[name].connections for name in ("mailer-1", "")] == [2, 2]
    ours = {address for worker in workers for address in worker.addresses}
    assert ours == {client["addr"] for client in theirs}
    # One host (the test's), no cluster node. The tests reach Redis by a unix
    # socket: its clients run on Redis's machine, said so, not the socket's path.
    assert {worker.host for worker in workers} == {UNIX_SOCKET_HOST}
    assert all(worker.node is None for worker in workers)
    assert all(worker.connected_s >= 0 and worker.idle_s >= 0 for worker in workers)


async def test_our_worker_names_its_connections_so_it_shows_and_leaves_when_closed(
    redis_url: str, redis_client: Redis
) -> None:
    async with running("emails", _nothing, url=redis_url, name="box-7") as worker:
        assert worker.connection_name == "bull:ZW1haWxz:w:box-7"
        (shown,) = await _until_workers(redis_client, 1)
        assert (shown.name, shown.connection_name) == ("box-7", "bull:ZW1haWxz:w:box-7")
        # The pipeline's connection and the blocking one.
        await until(lambda: _workers(redis_client)[0].connections == 2)
    await _until_workers(redis_client, 0)


async def test_our_worker_with_a_client_of_the_callers_names_its_pipeline_only(
    redis_url: str, redis_client: Redis
) -> None:
    from queues.connection import connect_async
    from queues.worker import Worker

    client = connect_async(redis_url)
    worker = Worker("emails", _nothing, client=client, drain_delay_s=0.2)
    task = asyncio.create_task(worker.run())
    try:
        (shown,) = await _until_workers(redis_client, 1)
        assert shown.connections == 1
        assert shown.name == worker.name  # the default: host:pid:token
    finally:
        await worker.close()
        await task
        await client.aclose()
    await _until_workers(redis_client, 0)


def test_names_that_only_look_like_a_workers_are_not_counted(
    redis_url: str, redis_client: Redis
) -> None:
    node_form, python_form = queue_name_forms("bull", "emails")
    lookalikes = [
        node_form + ":qe",
        node_form + "X",
        node_form + ":wx:w1",
        python_form + "-2:w:w1",
        "other:ZW1haWxz:w:w1",
        "bull:",
    ]
    with named_connections(redis_url, *lookalikes, node_form + ":w:real"):
        (worker,) = _workers(redis_client)
    assert worker.name == "real"


def test_one_client_list_serves_every_queue_of_a_page(redis_url: str, redis_client: Redis) -> None:
    refs = [QueueRef("bull", f"q{n}") for n in range(6)]
    names = [queue_name_forms("bull", ref.name)[n % 2] + f":w:w{n}" for n, ref in enumerate(refs)]

    def client_list_calls() -> int:
        stats = redis_client.info("commandstats")
        return int(stats.get("cmdstat_client|list", {}).get("calls", 0))

    with named_connections(redis_url, *names):
        before = client_list_calls()
        counts = worker_counts(redis_client, refs)
        after = client_list_calls()
    assert counts == dict.fromkeys(refs, 1)
    assert after - before == 1


def test_workers_of_one_host_and_name_are_one_row_with_all_their_connections(
    redis_url: str, redis_client: Redis
) -> None:
    with named_connections(redis_url, "bull:emails", "bull:emails", "bull:emails"):
        (unnamed,) = _workers(redis_client)
    assert (unnamed.name, unnamed.connections) == ("", 3)


def test_a_server_refusing_client_list_says_so_and_claims_no_count(
    redis_url: str, redis_client: Redis
) -> None:
    user = f"noclient-{uuid.uuid4().hex[:8]}"
    redis_client.acl_setuser(
        user,
        enabled=True,
        passwords=["+pw"],
        keys=["*"],
        channels=["*"],
        commands=["+@all", "-client"],
    )
    limited = connect(redis_url, username=user, password="pw")
    try:
        workers, clients = queue_workers(limited, EMAILS)
        assert workers is None
        assert not clients.known
        assert "CLIENT LIST" in (clients.error or "")
        assert worker_counts(limited, [EMAILS]) is None
        assert workers_by_queue(clients, [EMAILS]) == {}
    finally:
        limited.close()
        redis_client.acl_deluser(user)


@pytest.mark.parametrize(
    "reply",
    [
        b"",
        b"garbage without fields\n\n",
        b"id=1 addr=1.2.3.4:5 name=bull:emails age=x idle=-3 extra\n",
        b"id=1 name=bull:emails age=12 idle=3 addr=[::1]:5555\r\n",
        b"id=1 addr=1.2.3.4:5 name=\xff\xfe age=1 idle=1\n",
        b"id=3 addr=/run/redis/redis.sock:0 name=bull:emails age=1 idle=1\n",
        b"id=2 addr=1.2.3.4:6 name= age=1 idle=1\n",
        # As a client library may hand it over, already split into fields.
        [{"name": "bull:emails", "addr": "1.2.3.4:5", "age": "3", "idle": "1"}, "junk", {}],
    ],
)
def test_any_client_list_answer_parses_without_an_error(reply: Any) -> None:
    found = parse_client_list(reply)
    for connection in found:
        assert connection.name
        assert connection.age_s >= 0
        assert connection.idle_s >= 0
    by_name = {c.name: c for c in found}
    if "bull:emails" in by_name:
        assert by_name["bull:emails"].host in ("1.2.3.4", "[::1]", UNIX_SOCKET_HOST)


def test_reading_the_client_list_of_a_plain_server_names_no_node(redis_client: Redis) -> None:
    clients = read_client_list(redis_client)
    assert clients.known
    assert clients.nodes == ()
