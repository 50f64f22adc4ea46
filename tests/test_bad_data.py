"""Whatever another writer left in Redis, the dashboard shows it and never 500s."""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from typing import Any
from urllib.parse import quote

import pytest
from redis import Redis

from dashboard.core.converters import SegmentConverter
from queues.read.refs import QueueRef
from queues.read.states import STATES
from tests.dashboard_seed import seed_events, seed_job

KEYS = QueueRef("bull", "emails").keys
Q = "/queues/bull/emails/"
XSS = "<script>alert(1)</script>"
XSS_ESCAPED = "&lt;script&gt;alert(1)&lt;/script&gt;"


@pytest.fixture
def viewer(dashboard_redis: Redis, client_as: Callable[[str | None], Any]) -> Any:
    return client_as("viewer")


def _every_view_of(client: Any, job_id: str) -> list[Any]:
    path = quote(job_id, safe="")
    urls = [
        "/",
        *(f"{Q}?state={state}" for state in STATES),
        f"{Q}events/",
        f"{Q}job/{path}",
        f"{Q}job/{path}?full=1",
        f"/api/queues/bull/emails/job/{path}",
        "/api/queues/bull/emails/jobs/?state=failed",
        "/api/queues/bull/emails/events/",
        "/api/queues/",
    ]
    responses = [client.get(url) for url in urls]
    for url, response in zip(urls, responses, strict=True):
        assert response.status_code == 200, (url, response.status_code)
    return responses


@pytest.mark.parametrize(
    "fields",
    [
        pytest.param({"unrelated": "x"}, id="no-known-fields"),
        pytest.param({"name": "n", "data": "{not json", "opts": "[[["}, id="non-json"),
        pytest.param({"data": '"just a string"', "opts": "[1, 2]"}, id="json-not-objects"),
        pytest.param(
            {"name": b"\xff\xfe\x00bin", "data": b"\x80\x81\xfe", "failedReason": b"\xc3\x28"},
            id="binary-bytes",
        ),
        pytest.param(
            {
                "timestamp": "yesterday",
                "finishedOn": "1e400",
                "processedOn": "-5",
                "atm": "many",
                "attemptsMade": "x",
                "priority": "high",
                "delay": "soon",
                "progress": "{bad",
                "stacktrace": "not a list",
                "parent": "garbage",
                "parentKey": "::::",
                "returnvalue": "{",
            },
            id="malformed-numbers-and-json",
        ),
        pytest.param({"stacktrace": json.dumps([{"a": 1}, None, 3])}, id="odd-stacktrace"),
        pytest.param({"opts": json.dumps({"attempts": "three", "backoff": []})}, id="odd-opts"),
        pytest.param({"progress": json.dumps({"step": 2, "of": 5})}, id="object-progress"),
    ],
)
@pytest.mark.parametrize("state", ["failed", "wait", "active", "delayed"])
def test_malformed_jobs_are_shown_not_crashed(
    dashboard_redis: Redis, viewer: Any, fields: dict[str, Any], state: str
) -> None:
    seed_job(dashboard_redis, KEYS, "odd", state=state, fields=fields, raw=True)
    responses = _every_view_of(viewer, "odd")
    assert 'data-job-id="odd"' in responses[-6].content.decode()


def test_ten_megabytes_of_data_are_truncated_on_the_page(
    dashboard_redis: Redis, viewer: Any
) -> None:
    big = json.dumps({"blob": "x" * 10_000_000, "end": "TAIL-MARK"})
    seed_job(dashboard_redis, KEYS, "huge", state="failed", fields={"data": big})
    page = viewer.get(Q + "job/huge")
    assert page.status_code == 200
    assert len(page.content) < 300_000
    assert "TAIL-MARK" not in page.content.decode()
    assert "Load all" in page.content.decode()
    rows = viewer.get(Q + "?state=failed")
    assert len(rows.content) < 100_000  # lists never fetch data
    api = viewer.get("/api/queues/bull/emails/job/huge").json()
    assert api["data_truncated"] is True
    assert api["data"] is None


def test_html_and_script_are_escaped_everywhere(dashboard_redis: Redis, viewer: Any) -> None:
    seed_job(
        dashboard_redis,
        KEYS,
        "x1",
        state="failed",
        name=XSS,
        data={"html": XSS},
        fields={
            "failedReason": XSS + "\nsecond",
            "stacktrace": json.dumps([XSS]),
            "returnvalue": json.dumps(XSS),
            "pb": XSS,
            "custom": XSS,
        },
    )
    dashboard_redis.rpush(KEYS.logs("x1"), XSS)
    seed_events(
        dashboard_redis,
        KEYS,
        [("failed", {"jobId": "x1", "failedReason": XSS}), (XSS, {"jobId": "x1", "name": XSS})],
    )
    pages = {
        "list": viewer.get(Q + "?state=failed").content.decode(),
        "job": viewer.get(Q + "job/x1").content.decode(),
        "events": viewer.get(Q + "events/").content.decode(),
    }
    for where, html in pages.items():
        assert XSS not in html, where
        assert "<script>alert" not in html, where
        assert XSS_ESCAPED in html, where
    job_html = pages["job"]
    # name, data, reason, stack trace, logs, worker and the unknown field: all there, escaped.
    assert job_html.count("alert(1)") >= 7


def test_html_in_a_queue_name_is_escaped(dashboard_redis: Redis, viewer: Any) -> None:
    weird = QueueRef("bull", "<b>q</b>").keys
    seed_job(dashboard_redis, weird, "1", state="failed")
    html = viewer.get("/").content.decode()
    assert "<b>q</b>" not in html
    assert "&lt;b&gt;q&lt;/b&gt;" in html
    segment = quote(SegmentConverter().to_url("<b>q</b>"), safe="~")
    assert viewer.get(f"/queues/bull/{segment}/").status_code == 200


@pytest.mark.parametrize(
    "job_id", ["with space", "ünïcødé-🚀", "a/b/c", "50% off?#frag", "  padded  ", "-1"]
)
def test_unusual_job_ids_work(dashboard_redis: Redis, viewer: Any, job_id: str) -> None:
    seed_job(dashboard_redis, KEYS, job_id, state="failed")
    responses = _every_view_of(viewer, job_id)
    job_page = responses[-6].content.decode()
    assert 'data-job-state="failed"' in job_page


@pytest.mark.parametrize(
    "url",
    [
        Q + "job/a:b",
        Q + "job/" + "x" * 600,
        Q + "job/%00",
        Q + "job/nl%0Ahere",
        "/queues/bull/a:b/",
        "/queues/bull/%20/",
        "/queues/bull/" + "q" * 300 + "/",
        "/queues/no-such-prefix/emails/",
        "/api/queues/bull/emails/job/a:b",
        "/api/queues/bull/missing/jobs/",
        "/queues/bull/emails/job/never-existed",
    ],
)
def test_bad_or_unknown_names_are_404(dashboard_redis: Redis, viewer: Any, url: str) -> None:
    seed_job(dashboard_redis, KEYS, "1")
    assert viewer.get(url).status_code == 404


def test_garbage_in_lists_and_streams(dashboard_redis: Redis, viewer: Any) -> None:
    seed_job(dashboard_redis, KEYS, "ok", state="failed")
    dashboard_redis.lpush(KEYS.wait, "0:legacy-marker", "gone-job", b"\xff\xfe")
    dashboard_redis.zadd(KEYS.failed, {"a:b": 5, "ghost": 6})
    dashboard_redis.xadd(KEYS.events, {"no-event-field": "1"})
    dashboard_redis.xadd(KEYS.events, {"event": "delayed", "jobId": "ok", "delay": "tomorrow"})
    dashboard_redis.xadd(KEYS.events, {"event": "progress", "jobId": "ok", "data": "{"})
    _every_view_of(viewer, "ok")
    html = viewer.get(Q + "?state=wait").content.decode()
    assert 'data-job-id="gone-job"' in html
    assert "hash missing" in html


def test_keys_of_the_wrong_type_read_as_empty(dashboard_redis: Redis, viewer: Any) -> None:
    seed_job(dashboard_redis, KEYS, "1", state="failed")
    dashboard_redis.set(KEYS.metrics_data("completed"), "not a list")
    dashboard_redis.set(KEYS.wait, "not a list")
    dashboard_redis.set(KEYS.events, "not a stream")
    dashboard_redis.set(KEYS.logs("1"), "not a list")
    dashboard_redis.set(KEYS.job("s"), "a string, not a hash")
    dashboard_redis.zadd(KEYS.failed, {"s": 1})
    _every_view_of(viewer, "1")
    html = viewer.get("/").content.decode()
    assert re.search(r'data-count-state="failed" title="2 failed">2<', html)


def test_queue_names_with_slash_and_tilde_round_trip(dashboard_redis: Redis, viewer: Any) -> None:
    seed_job(dashboard_redis, QueueRef("bull", "team/a~b").keys, "1", state="failed")
    html = viewer.get("/").content.decode()
    assert 'href="/queues/bull/team~sa~~b/"' in html
    page = viewer.get("/queues/bull/team~sa~~b/?state=failed").content.decode()
    assert 'data-queue="bull:team/a~b"' in page
    assert 'href="/queues/bull/team~sa~~b/job/1"' in page
