"""Redis over TLS: a redis-server with ``--tls-port`` only, certificates made
by the test (tests/tls.py), the server checking client certificates or not.

The URL is what a user writes: ``rediss://`` with redis-py's ``ssl_ca_certs``
and ``ssl_cert_reqs``, and ``ssl_certfile`` and ``ssl_keyfile`` when the
server checks clients. The worker, the dashboard's pages, actions, live
socket and history collector all go through it (tests/redis_roles.py).
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from typing import Any

import pytest
from redis.exceptions import ConnectionError as RedisConnectionError

from queues import discovery
from queues.connection import connect
from tests.redis_roles import (
    METRICS_TOKEN,
    act_on_everything,
    look_at_everything,
    worker_flow,
)
from tests.tls import TlsRedis, make_certificates


@pytest.fixture(params=[False, True], ids=["client certificates not checked", "checked"])
def tls_redis(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[TlsRedis]:
    certificates = make_certificates(tmp_path_factory.mktemp("certificates"))
    server = TlsRedis(certificates, check_clients=request.param).start()
    yield server
    server.stop()


@pytest.mark.django_db(transaction=True)
def test_the_worker_and_the_dashboard_work_over_tls(tls_redis: TlsRedis, settings: Any) -> None:
    assert tls_redis.url.startswith("rediss://127.0.0.1:")
    ids = asyncio.run(worker_flow(tls_redis.url))
    settings.REDIS_URL = tls_redis.url
    settings.ECHOMQ_METRICS_TOKEN = METRICS_TOKEN
    discovery.clear_discovery_cache()
    redis = connect(tls_redis.url)
    boss = look_at_everything(ids, redis)
    act_on_everything(boss, ids, redis)
    redis.close()


def test_a_client_without_the_certificate_the_server_asks_for_is_refused(
    tls_redis: TlsRedis,
) -> None:
    url = tls_redis.url
    if tls_redis.check_clients:
        url = url.split("&ssl_certfile=")[0]  # the CA only
    else:
        url = url.replace("rediss://", "redis://").split("?")[0]  # no TLS at all
    client = connect(url, retry=None, socket_timeout=2)
    with pytest.raises(RedisConnectionError):
        client.ping()
    client.close()
