"""Every admin action leaves an AuditEntry row, from the page and from the API alike."""

from __future__ import annotations

import datetime as dt
import json
import logging
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from django.db import DatabaseError, connection
from django.utils import timezone
from redis import Redis

from dashboard.models import AuditEntry
from queues.queue import Queue
from queues.read.refs import QueueRef
from tests.dashboard_seed import seed_job, seed_jobs

KEYS = QueueRef("bull", "emails").keys
PAGE = "/queues/bull/emails/"
API = "/api/queues/bull/emails/"


@pytest.fixture
def actor(dashboard_redis: Redis, client_as: Callable[[str | None], Any]) -> Any:
    return client_as("actor")


def entries() -> list[tuple[str, str, str, str, int, str]]:
    return [
        (e.user, e.action, e.queue, e.jobs, e.count, e.result)
        for e in AuditEntry.objects.order_by("id")
    ]


def test_each_action_from_the_page_is_recorded_with_what_it_did(
    actor: Any, dashboard_redis: Redis
) -> None:
    seed_jobs(dashboard_redis, KEYS, "failed", 3)
    actor.post(PAGE + "actions/", {"action": "retry", "ids": ["1"], "state": "failed"})
    actor.post(PAGE + "actions/", {"action": "retry", "ids": ["1"], "state": "failed"})
    actor.post(PAGE + "bulk/", {"action": "retry_all", "state": "failed"})
    actor.post(PAGE + "bulk/", {"action": "clean", "state": "completed", "grace_ms": 60_000})
    actor.post(PAGE + "bulk/", {"action": "pause"})
    actor.post(PAGE + "bulk/", {"action": "resume"})
    assert entries() == [
        ("actor", "retry", "bull:emails", "1", 1, "Job 1 retried"),
        # Refused (someone was quicker): recorded too, with nothing moved.
        ("actor", "retry", "bull:emails", "1", 0,
         "Job 1 is no longer failed — someone retried it already"),
        ("actor", "retry_all", "bull:emails", "state=failed", 2,
         "2 failed jobs moved back to waiting"),
        ("actor", "clean", "bull:emails", "state=completed", 0,
         "0 completed jobs older than 1 minute removed"),
        ("actor", "pause", "bull:emails", "state=failed", 0,
         "Queue emails paused: workers take no new jobs"),
        ("actor", "resume", "bull:emails", "state=failed", 0, "Queue emails resumed"),
    ]  # fmt: skip


def test_actions_through_the_api_are_recorded_the_same_way(
    actor: Any, dashboard_redis: Redis
) -> None:
    queue = Queue("emails", dashboard_redis)
    delayed = queue.add("later", {}, {"delay": 60_000})
    waiting = queue.add("now", {})

    def post(path: str, body: dict[str, Any]) -> None:
        response = actor.post(API + path, json.dumps(body), content_type="application/json")
        assert response.status_code == 200, response.content

    post("actions/", {"action": "promote", "ids": [delayed]})
    post("actions/", {"action": "fail", "ids": [waiting], "reason": "bad payload"})
    post("bulk/", {"action": "promote_all"})
    assert entries() == [
        ("actor", "promote", "bull:emails", delayed, 1, f"Job {delayed} promoted"),
        ("actor", "fail", "bull:emails", waiting, 1, f"Job {waiting} failed"),
        ("actor", "promote_all", "bull:emails", "state=failed", 0,
         "0 delayed jobs promoted to waiting"),
    ]  # fmt: skip


@pytest.fixture
def broken_audit_table() -> Iterator[None]:
    """The database refuses the audit row (a full disk, a locked file)."""

    def refuse(execute: Any, sql: str, params: Any, many: bool, context: Any) -> Any:
        if sql.startswith('INSERT INTO "dashboard_auditentry"'):
            raise DatabaseError("disk I/O error")
        return execute(sql, params, many, context)

    with connection.execute_wrapper(refuse):
        yield


@pytest.mark.usefixtures("broken_audit_table")
def test_an_action_still_answers_when_its_row_cannot_be_stored(
    actor: Any, dashboard_redis: Redis, caplog: pytest.LogCaptureFixture
) -> None:
    seed_job(dashboard_redis, KEYS, "42", state="failed")
    caplog.set_level(logging.INFO, logger="echomq.audit")
    response = actor.post(PAGE + "actions/", {"action": "retry", "ids": ["42"]}, follow=True)
    assert [str(m) for m in response.context["messages"]] == ["Job 42 retried"]
    assert Queue("emails", dashboard_redis).get_state("42") == "wait"
    logged = [r.getMessage() for r in caplog.records if r.name == "echomq.audit"]
    assert logged == [
        "user=actor action=retry queue=bull:emails jobs=42 result=moved=1 refused=0",
        "the audit entry of retry on bull:emails was not stored",
    ]


@pytest.mark.django_db
def test_a_queues_entries_since_a_moment_oldest_first_newest_kept() -> None:
    now = timezone.now()
    for minutes_ago, queue in [(90, "bull:a"), (50, "bull:a"), (30, "bull:b"), (20, "bull:a"),
                               (10, "bull:a")]:  # fmt: skip
        AuditEntry.objects.create(
            at=now - dt.timedelta(minutes=minutes_ago),
            user="u",
            action=f"pause-{minutes_ago}",
            queue=queue,
            jobs="",
            result="",
        )
    since = now - dt.timedelta(hours=1)
    found = AuditEntry.on_queue_since("bull:a", since, limit=2)
    assert [e.action for e in found] == ["pause-20", "pause-10"]
    assert [e.action for e in AuditEntry.on_queue_since("bull:a", since, 10)] == [
        "pause-50",
        "pause-20",
        "pause-10",
    ]
