"""A Redis outage answers 503 (JSON under the API, a page saying so elsewhere),
and both recover by themselves when Redis is back. The Redis is the test's
own (tests/outage.py), stopped and started again."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from django.http import HttpResponse
from django.test import RequestFactory
from django.urls import resolve
from redis.exceptions import ConnectionError as RedisConnectionError

from dashboard.core.errors import ErrorAnswersMiddleware
from queues import discovery
from queues.connection import connect
from queues.queue import Queue
from tests.outage import RestartableRedis, own_redis

__all__ = ["own_redis"]


def test_pages_and_api_answer_503_while_redis_is_down_and_recover(
    own_redis: RestartableRedis, settings: Any, client_as: Callable[[str | None], Any]
) -> None:
    settings.REDIS_URL = own_redis.url
    settings.ECHOMQ_QUEUES = ["emails"]
    discovery.clear_discovery_cache()
    viewer, actor = client_as("viewer"), client_as("actor")
    assert viewer.get("/api/queues/").status_code == 200
    assert viewer.get("/").status_code == 200

    own_redis.stop()
    api = viewer.get("/api/queues/")
    assert api.status_code == 503
    assert api["Content-Type"] == "application/json"
    assert api["Retry-After"] == "5"
    assert api.json()["error"]["code"] == "redis_unavailable"
    assert "Redis unreachable" in api.json()["error"]["message"]

    for url in ("/", "/queues/bull/emails/", "/queues/bull/emails/job/1"):
        page = viewer.get(url)
        assert page.status_code == 503, url
        assert page["Content-Type"].startswith("text/html")
        html = page.content.decode()
        assert "<h1>Redis unreachable</h1>" in html
        # Reloads itself; the CSP still holds (a meta tag, no script).
        assert '<meta http-equiv="refresh" content="5">' in html
        assert "<script>" not in html

    action = actor.post("/queues/bull/emails/bulk/", {"action": "pause"})
    assert action.status_code == 503
    assert "may or may not have run" in action.content.decode()
    assert 'http-equiv="refresh"' not in action.content.decode()
    api_action = actor.post("/api/queues/bull/emails/bulk/", {"action": "pause"})
    assert api_action.status_code == 503
    assert api_action.json()["error"]["code"] == "redis_unavailable"

    own_redis.start()
    Queue("emails", connect(own_redis.url)).add("back", {})
    body = viewer.get("/api/queues/").json()
    assert body["queues"][0]["counts"]["wait"] == 1
    assert viewer.get("/").status_code == 200


def test_a_redis_error_in_a_view_that_is_not_the_apps_is_left_to_the_project(
    rf: RequestFactory,
) -> None:
    """A project's own views may use a Redis of their own: their errors are theirs."""
    middleware = ErrorAnswersMiddleware(lambda request: HttpResponse())
    outage = RedisConnectionError("connection refused")
    ours, theirs = rf.get("/queues/bull/emails/"), rf.get("/login/")
    ours.resolver_match, theirs.resolver_match = resolve(ours.path), resolve(theirs.path)
    answer = middleware.process_exception(ours, outage)
    assert answer is not None
    assert answer.status_code == 503
    assert middleware.process_exception(theirs, outage) is None
