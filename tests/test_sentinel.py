"""Redis Sentinel for the runtime and the dashboard: a master, a replica and
three sentinels, all real redis-server processes (tests/sentinel.py).

The URL is ``redis+sentinel://:<master password>@<three sentinels>/queues/0
?sentinel_password=<theirs>``; every client asks the sentinels for the master.
The failovers here are real: a SIGKILL of the master, or SENTINEL FAILOVER.
"""

from __future__ import annotations

import asyncio
import os
import re
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from channels.testing import WebsocketCommunicator
from django.contrib.auth.models import Permission, User
from redis import Redis
from redis.exceptions import ConnectionError as RedisConnectionError

from dashboard.history.collector import _collector as dashboard_collector
from dashboard.live.consumer import LiveConsumer
from dashboard.live.hub import get_hub
from queues import discovery
from queues.autopipe import AutoPipeline
from queues.connection import connect, connect_async
from queues.job import Job
from queues.keys import QueueKeys
from queues.queue import Queue
from queues.read.history import totals
from queues.read.refs import QueueRef
from queues.sentinel import InvalidSentinelURL, failing_over, failing_over_async, parse
from tests.e2e.server import ROOT
from tests.sentinel import LocalSentinelSet
from tests.tls import make_certificates
from tests.worker_helpers import running, until

MASTER_PASSWORD = "master pass/word"  # percent-encoded in the URL
SENTINEL_PASSWORD = "sentinel-secret"


# --- the URL ---------------------------------------------------------------------------


def test_a_sentinel_url_names_the_sentinels_the_master_its_database_and_both_passwords() -> None:
    address = parse(
        "redis+sentinel://ops:p%40ss@10.0.0.1:26380,10.0.0.2,[fd00::3]:26381/queues%2Deu/2"
        "?sentinel_password=s3cret&sentinel_username=watcher&socket_connect_timeout=1.5"
    )
    assert address.sentinels == (("10.0.0.1", 26380), ("10.0.0.2", 26379), ("fd00::3", 26381))
    assert address.master == "queues-eu"
    assert address.server == {
        "username": "ops",
        "password": "p@ss",
        "db": 2,
        "socket_connect_timeout": 1.5,  # typed by redis-py's own URL parser
    }
    assert address.sentinel["username"] == "watcher"
    assert address.sentinel["password"] == "s3cret"
    # A sentinel that does not answer is passed over at once.
    assert address.sentinel["socket_timeout"] == 1.0


def test_a_tls_sentinel_url_speaks_tls_to_the_sentinels_and_the_master() -> None:
    address = parse(
        "rediss+sentinel://s1:26379,s2:26379/queues?ssl_ca_certs=/etc/redis/ca.pem"
        "&ssl_certfile=/etc/redis/client.pem&ssl_keyfile=/etc/redis/client.key"
        "&ssl_cert_reqs=required"
    )
    tls = {
        "ssl_ca_certs": "/etc/redis/ca.pem",
        "ssl_certfile": "/etc/redis/client.pem",
        "ssl_keyfile": "/etc/redis/client.key",
        "ssl_cert_reqs": "required",
    }
    assert address.server == {"ssl": True, **tls}
    assert {k: v for k, v in address.sentinel.items() if k.startswith("ssl")} == {
        "ssl": True,
        **tls,
    }


@pytest.mark.parametrize(
    ("url", "said"),
    [
        ("redis+sentinel://10.0.0.1:26379", "/<master name>"),
        ("redis+sentinel://10.0.0.1:26379/", "/<master name>"),
        ("redis+sentinel://10.0.0.1:26379/queues/zero", "must be a number, not 'zero'"),
        ("redis+sentinel://10.0.0.1:26379/queues/0/extra", "/<master name>"),
        ("redis+sentinel:///queues", "lists its sentinels"),
        ("redis+sentinel://10.0.0.1:port/queues", "not '10.0.0.1:port'"),
        ("redis+sentinel://s1/queues?socket_timeout=soon", "socket_timeout"),
    ],
)
def test_a_sentinel_url_missing_a_part_says_which(url: str, said: str) -> None:
    with pytest.raises(InvalidSentinelURL, match=said.replace("/", ".")):
        parse(url)


# --- a running set ------------------------------------------------------------------


def started_set() -> Iterator[LocalSentinelSet]:
    started = LocalSentinelSet(
        password=MASTER_PASSWORD, sentinel_password=SENTINEL_PASSWORD
    ).start()
    yield started
    started.stop()


# One set for the tests that do not fail it over (0.3 s to start), and one of
# its own for each test that does.
sentinels = pytest.fixture(scope="module", name="sentinels")(started_set)
own_sentinels = pytest.fixture(name="own_sentinels")(started_set)


def test_a_queue_on_a_sentinel_url_writes_to_the_master_alone(
    sentinels: LocalSentinelSet,
) -> None:
    client = connect(sentinels.url)
    client.flushall()
    queue = Queue("receipts", client)
    job_id = queue.add("send-receipt", {"order": "ord_3f9a2c71d0"})
    master, replica = sentinels.servers
    on_master = sentinels.data_client(master)
    assert on_master.hget(queue.keys.job(job_id), "name") == b"send-receipt"
    assert on_master.info("replication")["role"] == "master"
    # The replica has it by replication only: it stays a replica and took no write.
    on_replica = sentinels.data_client(replica)
    assert on_replica.info("replication")["role"] == "slave"
    assert "errorstat_READONLY" not in on_replica.info("errorstats")
    assert failing_over(client) is None  # a healthy master is no failover
    for each in (client, on_master, on_replica):
        each.close()


def test_closing_a_client_closes_its_connections_to_the_sentinels(
    sentinels: LocalSentinelSet,
) -> None:
    watcher = sentinels.sentinels[0].client(SENTINEL_PASSWORD)
    before = len(watcher.client_list())
    clients = [connect(sentinels.url) for _ in range(5)]
    for client in clients:
        client.ping()
    assert len(watcher.client_list()) >= before + 1
    for client in clients:
        client.close()
    # Each client opened one connection to a sentinel; none is left open.
    until_sync(lambda: len(watcher.client_list()) == before, 5)
    watcher.close()


def until_sync(predicate: Callable[[], object], timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError("condition not met in time")
        time.sleep(0.02)


async def test_a_worker_on_a_sentinel_url_processes_through_its_pipeline(
    sentinels: LocalSentinelSet,
) -> None:
    client = connect(sentinels.url)
    client.flushall()
    queue = Queue("receipts", client)
    ids = queue.add_bulk([("send-receipt", {"n": n}, None) for n in range(50)])
    done: list[str] = []

    async def process(job: Job) -> Any:
        done.append(job.id)
        return {"sent": job.data["n"]}

    async with running("receipts", process, url=sentinels.url, concurrency=5) as worker:
        # The worker's script calls go through one pipelined connection to the
        # master the sentinels name (queues.autopipe), as on a plain Redis.
        assert isinstance(worker._pipe, AutoPipeline)
        await until(lambda: len(done) == 50, 15)
    assert sorted(done, key=int) == ids
    assert queue.get_counts("completed")["completed"] == 50
    asyncio_client = connect_async(sentinels.url)
    assert await failing_over_async(asyncio_client) is None
    await asyncio_client.aclose()
    client.close()


def test_the_command_line_worker_takes_a_sentinel_url(sentinels: LocalSentinelSet) -> None:
    client = connect(sentinels.url)
    client.flushall()
    queue = Queue("receipts", client)
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    env.pop("REDIS_URL", None)
    command = [sys.executable, "-m", "queues", "worker", "receipts", "--url", sentinels.url]
    process = subprocess.Popen(command, cwd=ROOT, env=env, stdout=subprocess.PIPE, text=True)
    try:
        assert process.stdout is not None
        assert process.stdout.readline().startswith("worker ")
        job_id = queue.add("send-receipt", {"n": 1})
        until_sync(lambda: queue.get_state(job_id) == "completed", 10)
    finally:
        process.terminate()
        process.wait(10)
    client.close()


def test_sentinels_that_do_not_answer_are_named_without_their_password() -> None:
    """redis-py's MasterNotFoundError quotes each sentinel's client, whose own
    repr lists every connection option: the password went into the logs and
    onto the overview (a connection's error is its badge's title)."""
    dead = LocalSentinelSet(password=MASTER_PASSWORD, sentinel_password=SENTINEL_PASSWORD)
    dead.start()
    url = dead.url
    ports = [sentinel.port for sentinel in dead.sentinels]
    dead.stop()
    client = connect(url, retry=None)
    with pytest.raises(RedisConnectionError) as refused:
        client.ping()
    said = str(refused.value)
    assert f"No master found for 'queues' : sentinel 127.0.0.1:{ports[0]} - " in said
    assert all(f"127.0.0.1:{port}" in said for port in ports)
    assert SENTINEL_PASSWORD not in said
    assert failing_over(client) is None  # nobody answers: unreachable, not failing over
    client.close()


# --- failovers ----------------------------------------------------------------------


async def test_a_worker_goes_on_through_a_planned_failover_and_never_writes_to_a_replica(
    own_sentinels: LocalSentinelSet,
) -> None:
    """SENTINEL FAILOVER: the master becomes a replica while the worker runs.
    Every job completes on the new master; the demoted one refused no write
    (no READONLY answer anywhere: nothing was sent to it after its demotion)."""
    client = connect(own_sentinels.url)
    queue = Queue("receipts", client)
    ids = queue.add_bulk([("send-receipt", {"n": n}, None) for n in range(2000)])
    client.execute_command("WAIT", 1, 2000)  # the replica has them all
    done: list[str] = []

    async def process(job: Job) -> Any:
        await asyncio.sleep(0.002)
        done.append(job.id)

    old = own_sentinels.master
    async with running("receipts", process, url=own_sentinels.url, concurrency=10):
        await until(lambda: len(done) >= 300, 20)
        sentinel = own_sentinels.sentinels[0].client(SENTINEL_PASSWORD)
        assert sentinel.execute_command("SENTINEL FAILOVER", "queues")
        sentinel.close()
        await asyncio.to_thread(own_sentinels.wait_for_new_master, old)
        await until(lambda: queue.get_counts("completed")["completed"] == 2000, 30)
    new = own_sentinels.master
    assert new is not old
    assert sorted(set(done), key=int) == ids
    for server in own_sentinels.servers:
        errors = own_sentinels.data_client(server).info("errorstats")
        assert "errorstat_READONLY" not in errors, (server.port, errors)
    client.close()


def test_failing_over_says_what_the_sentinels_do_until_they_named_a_new_master(
    own_sentinels: LocalSentinelSet,
) -> None:
    client = connect(own_sentinels.url, retry=None)
    client.set("k", "v")
    client.execute_command("WAIT", 1, 2000)  # on the replica too: replication is asynchronous
    old = own_sentinels.kill_master()
    killed = time.monotonic()
    said = []
    while True:
        try:
            client.get("k")
            break
        except RedisConnectionError:
            failover = failing_over(client)
            said.append(failover.describe() if failover else None)
        assert time.monotonic() - killed < 20, said
        time.sleep(0.05)
    back = time.monotonic() - killed
    assert any(s and "are replacing master 'queues'" in s for s in said), said
    assert own_sentinels.master is not old
    assert client.get("k") == b"v"
    print(f"\nSIGKILL to the master -> a client reads from the new one: {back:.2f} s")
    client.close()


@pytest.mark.django_db
async def test_the_history_collector_resumes_on_the_new_master(
    own_sentinels: LocalSentinelSet, settings: Any
) -> None:
    """The collector of a dashboard process, made as the dashboard makes it
    (dashboard.history.collector): it counts jobs finished before and after a SIGKILL
    of the master, within 5 s of the sentinels naming the new one."""
    settings.REDIS_URL = own_sentinels.url
    settings.ECHOMQ_QUEUES = ["receipts"]
    client = connect(own_sentinels.url)
    ref = QueueRef("bull", "receipts")
    queue = Queue(ref.name, client)
    collector = dashboard_collector("default")
    collector.start()
    try:

        async def process(job: Job) -> Any:
            return None

        async with running(ref.name, process, url=own_sentinels.url, concurrency=2):
            queue.add_bulk([("send-receipt", {"n": n}, None) for n in range(20)])

            def counted() -> int:
                return totals(client, [ref])[ref].figures.completed

            await until(lambda: counted() == 20, 15)
            client.execute_command("WAIT", 1, 2000)
            old = own_sentinels.kill_master()
            failover_s = await asyncio.to_thread(own_sentinels.wait_for_new_master, old)
            named = time.monotonic()
            queue.add_bulk([("send-receipt", {"n": n}, None) for n in range(20, 30)])
            await until(lambda: counted() == 30, 15)
            resumed = time.monotonic() - named
    finally:
        collector.stop()
    print(
        f"\nnew master named {failover_s:.2f} s after the SIGKILL;"
        f" history again {resumed:.2f} s later"
    )
    assert resumed < 5
    client.close()


# --- the dashboard during a failover ------------------------------------------------


@pytest.mark.django_db
def test_pages_and_api_say_redis_is_failing_over_then_answer_from_the_new_master(
    own_sentinels: LocalSentinelSet, settings: Any, client_as: Callable[[str | None], Any]
) -> None:
    """While the sentinels replace the master: a 503 that says so (JSON under the
    API, a page that reloads itself elsewhere), never a 500; then the new
    master's data, without anything restarted."""
    settings.REDIS_URL = own_sentinels.url
    settings.ECHOMQ_QUEUES = ["receipts"]
    discovery.clear_discovery_cache()
    client = connect(own_sentinels.url)
    Queue("receipts", client).add("send-receipt", {"n": 1})
    client.execute_command("WAIT", 1, 2000)
    viewer = client_as("viewer")
    assert viewer.get("/api/queues/").status_code == 200

    old = own_sentinels.kill_master()
    killed = time.monotonic()
    codes = []
    while time.monotonic() - killed < 30:
        api = viewer.get("/api/queues/")
        if api.status_code == 200:
            break
        assert api.status_code == 503, api.content
        assert api["Retry-After"] == "5"
        codes.append(api.json()["error"]["code"])
        if codes[-1] == "redis_failing_over":
            message = api.json()["error"]["message"]
            assert message.startswith("Redis is failing over (the sentinels "), message
            page = viewer.get("/queues/bull/receipts/")
            if page.status_code == 503:
                html = page.content.decode()
                assert "<h1>Redis failing over</h1>" in html
                assert '<meta http-equiv="refresh" content="5">' in html
    back = time.monotonic() - killed
    assert "redis_failing_over" in codes, codes
    assert own_sentinels.master is not old
    assert viewer.get("/api/queues/").json()["queues"][0]["counts"]["wait"] == 1
    assert viewer.get("/queues/bull/receipts/").status_code == 200
    print(f"\nanswers: {codes}; the new master's data {back:.1f} s after the SIGKILL")
    client.close()


@pytest.mark.django_db(transaction=True)
async def test_a_live_page_hears_the_failover_and_resumes_from_the_new_master(
    own_sentinels: LocalSentinelSet, settings: Any
) -> None:
    settings.REDIS_URL = own_sentinels.url
    settings.ECHOMQ_QUEUES = ["receipts"]
    redis = connect(own_sentinels.url)
    stream = QueueKeys("receipts").events
    redis.set(QueueKeys("receipts").id, 0)
    communicator = await live_socket()
    try:
        await communicator.send_json_to(
            {"type": "subscribe", "queues": [{"queue": "bull:receipts", "last_id": None}]}
        )
        assert (await communicator.receive_json_from(timeout=5))["type"] == "subscribed"
        seen = redis.xadd(stream, {"event": "added", "jobId": "1"}).decode()
        assert (await communicator.receive_json_from(timeout=5))["events"][0]["id"] == seen
        redis.execute_command("WAIT", 1, 2000)

        old = own_sentinels.kill_master()
        statuses = []
        while not statuses or statuses[-1] != "failing_over":
            message = await communicator.receive_json_from(timeout=10)
            assert message["type"] == "status", message
            statuses.append(message["redis"])
        assert set(statuses) <= {"unreachable", "failing_over"}
        await asyncio.to_thread(own_sentinels.wait_for_new_master, old)
        named = time.monotonic()
        assert await communicator.receive_json_from(timeout=5) == {"type": "status", "redis": "ok"}
        resumed = time.monotonic() - named
        # The page subscribes again from the last event it has (live.js onStatus).
        await communicator.send_json_to(
            {"type": "subscribe", "queues": [{"queue": "bull:receipts", "last_id": seen}]}
        )
        assert (await communicator.receive_json_from(timeout=5))["type"] == "subscribed"
        after = redis.xadd(stream, {"event": "added", "jobId": "2"}).decode()
        assert (await communicator.receive_json_from(timeout=5))["events"][0]["id"] == after
        print(f"\nlive again {resumed:.2f} s after the sentinels named the new master")
        assert resumed < 5
    finally:
        await communicator.disconnect()
        await get_hub().close()
        redis.close()


async def live_socket() -> WebsocketCommunicator:
    def viewer() -> User:
        user = User.objects.create_user("oncall", password="pw", is_staff=True)
        user.user_permissions.add(Permission.objects.get(codename="view_queues"))
        return user

    communicator = WebsocketCommunicator(LiveConsumer.as_asgi(), "/ws/live/")
    communicator.scope["user"] = await asyncio.to_thread(viewer)
    connected, _ = await communicator.connect()
    assert connected
    return communicator


@pytest.mark.django_db
def test_a_sentinel_connection_beside_others_is_shown_failing_over_then_back(
    own_sentinels: LocalSentinelSet,
    redis_client: Redis,
    settings: Any,
    client_as: Callable[[str | None], Any],
) -> None:
    """With several connections the overview goes on with the others, and the
    one whose master is being replaced says so in its heading."""
    settings.ECHOMQ_CONNECTIONS = [{"name": "eu", "url": own_sentinels.url}]
    client = connect(own_sentinels.url)
    Queue("receipts", client).add("send-receipt", {"n": 1})
    client.execute_command("WAIT", 1, 2000)
    viewer = client_as("viewer")
    assert viewer.get("/api/queues/").json()["connections"][1]["queues"] == 1

    old = own_sentinels.kill_master()

    def eu() -> dict[str, Any]:
        connection: dict[str, Any] = viewer.get("/api/queues/").json()["connections"][1]
        return connection

    until_sync(lambda: eu()["failing_over"], 15)
    assert eu()["reachable"] is False
    html = viewer.get("/").content.decode()
    assert '<span class="badge connection-down"' in html
    assert ">failing over</span>" in html
    # "see master 'queues' (…) down", then "are replacing master 'queues' (…)".
    assert re.search(r"the sentinels (see|are replacing) master &#x27;queues&#x27; \(127", html)
    own_sentinels.wait_for_new_master(old)
    until_sync(lambda: eu()["reachable"], 10)
    assert eu() == {
        "name": "eu",
        "reachable": True,
        "error": None,
        "failing_over": False,
        "queues": 1,
    }
    client.close()


async def test_rediss_sentinel_speaks_tls_to_the_sentinels_and_every_master(
    tmp_path: Path,
) -> None:
    """Every server and sentinel listens on TLS only: the URL's rediss+sentinel
    and its ssl_ca_certs reach the sentinels and the master, and the new
    master after a SIGKILL."""
    tls = LocalSentinelSet(password=MASTER_PASSWORD, tls=make_certificates(tmp_path))
    tls.start()
    try:
        assert tls.url.startswith("rediss+sentinel://")
        client = connect(tls.url)
        queue = Queue("receipts", client)
        ids = queue.add_bulk([("send-receipt", {"n": n}, None) for n in range(20)])
        done: list[str] = []

        async def process(job: Job) -> Any:
            done.append(job.id)

        async with running("receipts", process, url=tls.url, concurrency=2):
            # Finished, not only run: a finish in flight at the SIGKILL would
            # wait for the stalled check (a 30 s lock) before it ran again.
            await until(lambda: queue.get_counts("completed")["completed"] == 20, 15)
            client.execute_command("WAIT", 1, 2000)
            old = tls.kill_master()
            await asyncio.to_thread(tls.wait_for_new_master, old)
            later = queue.add("send-receipt", {"n": 20})
            await until(lambda: later in done, 20)
        assert sorted(done, key=int) == [*ids, later]
        assert queue.get_counts("completed")["completed"] == 21
        client.close()
    finally:
        tls.stop()
