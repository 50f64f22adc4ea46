"""The metrics history with several Redis servers (ECHOMQ_CONNECTIONS): each
server keeps its own queues' history and elects its own collector; the
overview's last hour, the queue page's chart and /metrics read each queue's
figures from its own server, and a server that does not answer is said to be
so while the others are shown as usual."""

from __future__ import annotations

import re
import time
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from django.test import Client
from redis import Redis

from dashboard.history import collector as process_collector
from queues.read.refs import QueueRef
from tests.e2e.server import free_port
from tests.history_helpers import collect_until_read, job_events, write_events
from tests.test_prometheus import TOKEN, samples, scrape

EMAILS = QueueRef("bull", "emails")


def finished(client: Redis, *, completed: int, failed: int) -> None:
    """``completed`` + ``failed`` jobs of ``emails`` finished a few minutes ago."""
    base = int(time.time() * 1000) - 5 * 60_000
    events = [
        e
        for n in range(completed + failed)
        for e in job_events(f"j{n}", base + n, 100, 30, ok=n >= failed)
    ]
    write_events(client, EMAILS, events)


@pytest.fixture
def collected(dashboard_redis: Redis, staging_redis: Redis, settings: Any) -> Iterator[None]:
    """``emails`` on both servers, different figures on each, and each server's
    history collected by the collector the dashboard process starts for it."""
    settings.ECHOMQ_QUEUES = [EMAILS.qualified]
    settings.ECHOMQ_CONNECTIONS[0]["queues"] = [EMAILS.qualified]
    finished(dashboard_redis, completed=4, failed=0)
    finished(staging_redis, completed=2, failed=6)
    settings.ECHOMQ_HISTORY_COLLECTOR = True
    process_collector._running.clear()
    # The threads are stopped at once: the test steps each collector itself.
    started = process_collector.start()
    try:
        for one in started:
            one.stop()
        assert len(started) == 2
        for one in started:
            collect_until_read(one)
        yield
    finally:
        for one in started:
            one.stop()
        process_collector._running.clear()


def test_one_collector_per_server_each_writing_its_own_servers_history(
    collected: None, dashboard_redis: Redis, staging_redis: Redis
) -> None:
    from queues.read.history import collector_status, recent

    default = recent(dashboard_redis, [EMAILS])[EMAILS]
    staging = recent(staging_redis, [EMAILS])[EMAILS]
    assert (default.completed, default.failed) == (4, 0)
    assert (staging.completed, staging.failed) == (2, 6)
    assert collector_status(dashboard_redis).lag_s() is not None
    assert collector_status(staging_redis).lag_s() is not None


def test_the_overview_and_the_chart_show_each_servers_own_figures(
    collected: None, client_as: Callable[[str | None], Client]
) -> None:
    viewer = client_as("viewer")
    html = viewer.get("/history/last-hour/").content.decode()
    rows = dict(re.findall(r'<tr data-summary-queue="([^"]+)">(.*?)</tr>', html, re.S))
    assert set(rows) == {"bull:emails", "staging bull:emails"}
    # Most failing first: staging's 75% before the default's 0%.
    assert html.index("staging bull:emails") < html.index('"bull:emails"')
    cells = re.findall(r'<td class="num"[^>]*>(.*?)</td>', rows["staging bull:emails"], re.S)
    assert cells[:2] == ["2", "6"]
    assert 'href="/c/staging/queues/bull/emails/"' in rows["staging bull:emails"]
    chart = viewer.get("/c/staging/queues/bull/emails/history/", {"range": "1h"})
    assert chart.status_code == 200
    assert "2 completed, 6 failures" in chart.content.decode()
    assert (
        "4 completed"
        in viewer.get("/queues/bull/emails/history/", {"range": "1h"}).content.decode()
    )


def test_metrics_label_each_queue_with_its_server_and_say_which_did_not_answer(
    collected: None, settings: Any
) -> None:
    settings.ECHOMQ_METRICS_TOKEN = TOKEN
    settings.ECHOMQ_CONNECTIONS = [
        *settings.ECHOMQ_CONNECTIONS,
        {"name": "eu-down", "url": f"redis://127.0.0.1:{free_port()}/0", "prefixes": ["bull"]},
    ]
    answer = scrape()
    assert answer.status_code == 200
    found = samples(answer.content.decode())

    def queue(connection: str) -> tuple[tuple[str, str], ...]:
        return (("connection", connection), ("prefix", "bull"), ("queue", "emails"))

    assert found[("echomq_queue_completed_total", queue("default"))] == 4
    assert found[("echomq_queue_failed_total", queue("staging"))] == 6
    assert found[("echomq_redis_up", (("connection", "default"),))] == 1
    assert found[("echomq_redis_up", (("connection", "staging"),))] == 1
    assert found[("echomq_redis_up", (("connection", "eu-down"),))] == 0
    assert ("echomq_collector_lag_seconds", (("connection", "staging"),)) in found
    assert not any(
        dict(labels).get("connection") == "eu-down"
        for name, labels in found
        if name != "echomq_redis_up"
    )


def test_the_overview_says_which_server_it_could_not_read(
    collected: None, client_as: Callable[[str | None], Client], settings: Any
) -> None:
    settings.ECHOMQ_CONNECTIONS = [
        *settings.ECHOMQ_CONNECTIONS,
        {"name": "eu-down", "url": f"redis://127.0.0.1:{free_port()}/0", "prefixes": ["bull"]},
    ]
    answer = client_as("viewer").get("/history/last-hour/")
    assert answer.status_code == 200
    html = answer.content.decode()
    assert "Not read: eu-down did not answer." in html
    assert 'data-summary-queue="staging bull:emails"' in html


def test_the_history_chart_marks_the_admin_actions_of_its_own_server(
    collected: None, client_as: Callable[[str | None], Client]
) -> None:
    from dashboard.models import AuditEntry

    # The same queue name on both servers, one action on each.
    for connection, result in (("default", "Retried 4 jobs"), ("staging", "Retried 6 jobs")):
        AuditEntry.objects.create(
            user="oncall",
            action="retry_all",
            queue=EMAILS.qualified,
            connection=connection,
            jobs="state=failed",
            count=4 if connection == "default" else 6,
            result=result,
        )
    viewer = client_as("viewer")
    staging = viewer.get("/c/staging/queues/bull/emails/history/", {"range": "1h"})
    assert "retry all by oncall: Retried 6 jobs" in staging.content.decode()
    assert "Retried 4 jobs" not in staging.content.decode()
    default = viewer.get("/queues/bull/emails/history/", {"range": "1h"}).content.decode()
    assert "retry all by oncall: Retried 4 jobs" in default
    assert "Retried 6 jobs" not in default
