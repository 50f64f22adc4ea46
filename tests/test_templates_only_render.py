"""Views read, templates render (issue 25 point 3): while a page's template
renders, nothing reaches Redis or the database; whatever a page shows was
read by its view first."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import pytest
from django.db import connection
from django.template.backends.django import Template
from django.test import Client
from redis import Redis

from queues.keys import QueueKeys
from tests.dashboard_seed import seed_events, seed_job
from tests.round_trips import counted_sends

QUEUE = "/queues/bull/emails/"
PAGES = [
    "/",
    QUEUE,
    f"{QUEUE}?state=wait",
    f"{QUEUE}events/",
    f"{QUEUE}workers/",
    f"{QUEUE}schedulers/",
    f"{QUEUE}errors/",
    f"{QUEUE}job/1",
    f"{QUEUE}job/2",
    f"{QUEUE}cohorts/",
    f"{QUEUE}history/",
]


@contextmanager
def reads_while_rendering(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[str]]:
    """What reached Redis or the database while a template rendered, one entry each."""
    reads: list[str] = []
    render = Template.render

    def watched(self: Template, *args: Any, **kwargs: Any) -> Any:
        def query(execute: Any, sql: str, *rest: Any) -> Any:
            reads.append(f"{self.origin.template_name}: SQL {sql[:80]}")
            return execute(sql, *rest)

        with counted_sends(monkeypatch) as sent, connection.execute_wrapper(query):
            html = render(self, *args, **kwargs)
        reads.extend(f"{self.origin.template_name}: Redis {s!r:.80}" for s in sent)
        return html

    with monkeypatch.context() as patch:
        patch.setattr(Template, "render", watched)
        yield reads


@pytest.mark.parametrize("url", PAGES)
def test_a_page_template_reads_nothing_while_it_renders(
    url: str,
    dashboard_redis: Redis,
    make_user: Callable[..., Any],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    keys = QueueKeys("emails")
    seed_job(dashboard_redis, keys, "1", state="failed")
    seed_job(dashboard_redis, keys, "2", state="wait")
    seed_events(
        dashboard_redis,
        keys,
        [
            ("added", {"jobId": "1", "name": "task"}),
            ("failed", {"jobId": "1", "failedReason": "boom"}),
        ],
    )
    client = Client()
    client.force_login(make_user("superuser"))
    client.get(url)  # the signed-in user and their permissions, read once per while
    with reads_while_rendering(monkeypatch) as reads:
        answer = client.get(url)
    assert answer.status_code == 200
    assert reads == []
