"""Admins racing each other never half-move a job: each move is one script."""

from __future__ import annotations

import html
import re
import threading
from collections.abc import Callable
from typing import Any

import pytest
from django.db import connections
from redis import Redis

from queues.queue import Queue
from queues.read.refs import QueueRef
from tests.dashboard_seed import seed_job

KEYS = QueueRef("bull", "emails").keys
CLICKS = 20
MESSAGE = re.compile(r'<p class="message message-\w+">(.*?)</p>')


def _race(clients: list[Any], send: Callable[[Any], Any]) -> list[Any]:
    """Send one request per client, all released at the same instant."""
    barrier = threading.Barrier(len(clients))
    results: list[Any] = [None] * len(clients)

    def worker(index: int) -> None:
        try:
            barrier.wait()
            results[index] = send(clients[index])
        except Exception as error:  # surfaced by the assertions below
            results[index] = error
        finally:
            connections.close_all()

    threads = [threading.Thread(target=worker, args=(i,)) for i in range(len(clients))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(30)
    return results


@pytest.fixture
def actors(
    transactional_db: None, dashboard_redis: Redis, make_user: Callable[..., Any]
) -> list[Any]:
    """One admin in twenty browser tabs: own cookies (and messages) per client."""
    from django.test import Client

    user = make_user("actor")
    clients = []
    for _ in range(CLICKS):
        client = Client()
        client.force_login(user)
        clients.append(client)
    return clients


def test_twenty_retry_clicks_on_one_failed_job_move_it_once(
    actors: list[Any], dashboard_redis: Redis
) -> None:
    seed_job(dashboard_redis, KEYS, "42", state="failed")
    dashboard_redis.xtrim(KEYS.events, maxlen=0)

    def click(client: Any) -> list[str]:
        response = client.post(
            "/queues/bull/emails/actions/",
            {"action": "retry", "ids": ["42"], "state": "failed"},
            follow=True,
        )
        # Read the rendered page, not response.context: the test client collects
        # contexts through a process-wide signal, which threads would mix up.
        return [html.unescape(m) for m in MESSAGE.findall(response.content.decode())]

    results = _race(actors, click)
    assert not [r for r in results if isinstance(r, Exception)], results
    messages = [m for result in results for m in result]
    assert messages.count("Job 42 retried") == 1
    assert messages.count("Job 42 is no longer failed — someone retried it already") == CLICKS - 1
    queue = Queue("emails", dashboard_redis)
    assert queue.get_state("42") == "wait"
    assert dashboard_redis.llen(KEYS.wait) == 1
    assert dashboard_redis.zcard(KEYS.failed) == 0
    waiting = [e for e in dashboard_redis.xrange(KEYS.events) if e[1][b"event"] == b"waiting"]
    assert len(waiting) == 1


def test_racing_api_retry_all_and_single_retries_move_each_job_once(
    actors: list[Any], dashboard_redis: Redis
) -> None:
    for n in range(200):
        seed_job(dashboard_redis, KEYS, str(n), state="failed", score=n)

    def call(client: Any) -> int:
        index = actors.index(client)
        if index % 2:
            body = {"action": "retry_all"}
            return int(client.post("/api/queues/bull/emails/bulk/", body).json()["count"])
        ids = [str(n) for n in range(index * 10, index * 10 + 10)]
        body = {"action": "retry", "ids": ids}
        return int(client.post("/api/queues/bull/emails/actions/", body).json()["count"])

    results = _race(actors, call)
    assert not [r for r in results if isinstance(r, Exception)], results
    assert sum(results) == 200
    assert dashboard_redis.llen(KEYS.wait) == 200
    assert len(set(dashboard_redis.lrange(KEYS.wait, 0, -1))) == 200
