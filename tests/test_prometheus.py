"""``/metrics``: parsed with Prometheus' own parser, checked against a known
keyspace; a bearer token is required, a wrong one refused, no setting no endpoint."""

from __future__ import annotations

from typing import Any

import pytest
from django.test import Client
from prometheus_client.parser import text_string_to_metric_families
from redis import Redis

from queues.collector import HistoryCollector
from queues.connection import connect
from queues.keys import HistoryKeys
from queues.queue import Queue
from queues.read.refs import QueueRef
from queues.read.states import TABS
from tests.history_helpers import collect_until_read, job_events, write_events

TOKEN = "scrape-me-0123456789"
REF = QueueRef("bull", "prom")
OTHER = QueueRef("bull", "prom-other")
DEFAULT = (("connection", "default"),)


@pytest.fixture
def metrics_on(dashboard_redis: Redis, settings: Any) -> Redis:
    settings.ECHOMQ_METRICS_TOKEN = TOKEN
    return dashboard_redis


def scrape(token: str | None = TOKEN) -> Any:
    headers = {"HTTP_AUTHORIZATION": f"Bearer {token}"} if token is not None else {}
    return Client().get("/metrics", **headers)


def samples(text: str) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    found = {}
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            found[(sample.name, tuple(sorted(sample.labels.items())))] = sample.value
    return found


def queue_labels(ref: QueueRef, **more: str) -> tuple[tuple[str, str], ...]:
    return tuple(
        sorted(
            {"connection": ref.connection, "prefix": ref.prefix, "queue": ref.name, **more}.items()
        )
    )


def test_the_scrape_matches_a_known_keyspace(metrics_on: Redis, redis_url: str) -> None:
    queue = Queue(REF.name, metrics_on)
    queue.add_bulk([("n", None, None) for _ in range(4)])
    queue.add("d", None, {"delay": 60_000})
    Queue(OTHER.name, metrics_on).add("n")
    Queue(OTHER.name, metrics_on).pause()
    # 30 jobs of 20 ms that waited 300 ms, 10 of them failed.
    base = int(metrics_on.time()[0]) * 1000 + 2000  # after the adds above
    events = [e for n in range(30) for e in job_events(f"h{n}", base + 10 * n, 300, 20, ok=n >= 10)]
    write_events(metrics_on, REF, events)
    collect_until_read(HistoryCollector(connect(redis_url), lambda: [REF, OTHER], name="t"))

    answer = scrape()
    assert answer.status_code == 200
    assert answer["Content-Type"].startswith("text/plain; version=")
    found = samples(answer.content.decode())
    assert found[("echomq_redis_up", DEFAULT)] == 1
    assert found[("echomq_queue_jobs", queue_labels(REF, state="wait"))] == 4
    assert found[("echomq_queue_jobs", queue_labels(REF, state="delayed"))] == 1
    # Every state is exported, named as queues.read.states names them.
    exported = {labels for name, labels in found if name == "echomq_queue_jobs"}
    for tab in TABS:
        assert queue_labels(REF, state=tab.name) in exported
    assert found[("echomq_queue_paused", queue_labels(OTHER))] == 1
    assert found[("echomq_queue_paused", queue_labels(REF))] == 0
    assert found[("echomq_queue_workers", queue_labels(REF))] == 0
    assert found[("echomq_queue_completed_total", queue_labels(REF))] == 20
    assert found[("echomq_queue_failed_total", queue_labels(REF))] == 10
    assert found[("echomq_queue_backlog", queue_labels(REF))] == 4
    assert found[("echomq_history_gaps_total", queue_labels(REF))] == 0
    run = "echomq_queue_run_seconds"
    assert found[(f"{run}_count", queue_labels(REF))] == 30
    assert found[(f"{run}_sum", queue_labels(REF))] == pytest.approx(30 * 0.020)
    assert found[(f"{run}_bucket", queue_labels(REF, le="0.016"))] == 0
    assert found[(f"{run}_bucket", queue_labels(REF, le="0.032"))] == 30
    wait = "echomq_queue_wait_seconds"
    assert found[(f"{wait}_bucket", queue_labels(REF, le="0.256"))] == 0
    assert found[(f"{wait}_bucket", queue_labels(REF, le="0.512"))] == 30
    assert found[(f"{wait}_bucket", queue_labels(REF, le="+Inf"))] == 30
    assert 0 <= found[("echomq_collector_lag_seconds", DEFAULT)] < 30
    assert found[("echomq_queues_omitted", ())] == 0


def test_a_bearer_token_is_required_and_a_wrong_one_refused(metrics_on: Redis) -> None:
    missing = scrape(None)
    assert missing.status_code == 401
    assert missing["WWW-Authenticate"].startswith("Bearer")
    assert scrape("not-the-token").status_code == 403
    assert scrape(TOKEN + "x").status_code == 403
    assert Client().get("/metrics", HTTP_AUTHORIZATION=f"Basic {TOKEN}").status_code == 401
    assert b"echomq_queue" not in missing.content
    assert scrape().status_code == 200


def test_no_token_setting_means_no_endpoint(dashboard_redis: Redis, settings: Any) -> None:
    settings.ECHOMQ_METRICS_TOKEN = None
    assert scrape().status_code == 404


def test_redis_down_is_a_metric_not_an_error(metrics_on: Redis, settings: Any) -> None:
    from dashboard.core import redis as dashboard_redis

    settings.REDIS_URL = "redis://127.0.0.1:1/0"  # nothing listens on port 1
    try:
        answer = scrape()
    finally:
        dashboard_redis._clients.pop("redis://127.0.0.1:1/0", None)
    assert answer.status_code == 200
    assert samples(answer.content.decode())[("echomq_redis_up", DEFAULT)] == 0


def test_an_unreachable_cluster_is_a_metric_not_an_error(metrics_on: Redis, settings: Any) -> None:
    """A cluster client that reaches no node raises redis-py's cluster error,
    which is no RedisError: the scrape answered 500 instead of "down"."""
    from dashboard.core import redis as dashboard_redis

    url = "redis://127.0.0.1:1/0?cluster=1"  # nothing listens on port 1
    settings.REDIS_URL = url
    try:
        answer = scrape()
    finally:
        dashboard_redis._clients.pop(url, None)
    assert answer.status_code == 200
    assert samples(answer.content.decode())[("echomq_redis_up", DEFAULT)] == 0


def test_a_queue_whose_history_stopped_is_a_metric(metrics_on: Redis, redis_url: str) -> None:
    """One queue's broken history key: its history stops (the others go on),
    and the scrape says which, for an alert."""
    for ref in (REF, OTHER):
        Queue(ref.name, metrics_on).add("n")
    metrics_on.set(HistoryKeys(OTHER.name, OTHER.prefix).state, "x")
    collect_until_read(HistoryCollector(connect(redis_url), lambda: [REF, OTHER], name="t"))
    found = samples(scrape().content.decode())
    assert found[("echomq_history_stopped", queue_labels(OTHER))] == 1
    assert found[("echomq_history_stopped", queue_labels(REF))] == 0
    assert found[("echomq_queue_backlog", queue_labels(REF))] == 1
