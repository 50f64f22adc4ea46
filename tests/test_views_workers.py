"""The workers tab, its JSON and the global concurrency action (dashboard.workers.views),
against a real Redis with a bullmq 2.20.1 worker and ours connected, each in
its own process, while the page loads."""

from __future__ import annotations

import json
import re
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from redis import Redis

from dashboard.browse import health_reads
from dashboard.core.redis import get_client
from dashboard.models import AuditEntry
from queues import discovery
from queues.connection_names import queue_name_forms
from queues.queue import Queue
from queues.read.refs import QueueRef
from queues.read.workers import forget_client_lists
from tests.dashboard_seed import seed_job
from tests.test_discovery import eventually

EMAILS = QueueRef("bull", "emails")
KEYS = EMAILS.keys
PAGE = "/queues/bull/emails/workers/"
API = "/api/queues/bull/emails/"
ACTION = "/queues/bull/emails/concurrency/"
ROOT = Path(__file__).resolve().parent.parent
PEER = ROOT / "tests" / "e2e" / "peer.py"


@pytest.fixture
def viewer(dashboard_redis: Redis, client_as: Callable[[str | None], Any]) -> Any:
    seed_job(dashboard_redis, KEYS, "1")
    return client_as("viewer")


@pytest.fixture
def actor(dashboard_redis: Redis, client_as: Callable[[str | None], Any]) -> Any:
    seed_job(dashboard_redis, KEYS, "1")
    return client_as("actor")


@contextmanager
def worker_process(redis_url: str, *command: str) -> Iterator[subprocess.Popen[bytes]]:
    """A worker in its own process until the block ends (then SIGTERM, then kill)."""
    env = {"REDIS_URL": redis_url, "PATH": "/usr/bin:/bin", "PYTHONPATH": str(ROOT)}
    process = subprocess.Popen(
        [sys.executable, *command], cwd=ROOT, env=env, stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )  # fmt: skip
    try:
        yield process
    finally:
        process.terminate()
        try:
            process.wait(10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(5)


@contextmanager
def named_connections(redis_url: str, *names: str) -> Iterator[None]:
    clients = [Redis.from_url(redis_url, client_name=name) for name in names]
    for client in clients:
        client.ping()
    try:
        yield
    finally:
        for client in clients:
            client.close()


def _html(response: Any) -> str:
    assert response.status_code == 200, response.content[:500]
    return str(response.content.decode())


def _rows(html: str) -> list[str]:
    return sorted(re.findall(r'<tr data-worker="([^"]*)">', html))


def _until_rows(client: Any, wanted: list[str], timeout: float = 20.0) -> str:
    deadline = time.monotonic() + timeout
    while True:
        html = _html(client.get(PAGE))
        if _rows(html) == wanted or time.monotonic() > deadline:
            assert _rows(html) == wanted, html[-3000:]
            return html
        time.sleep(0.1)


def test_the_tab_lists_bullmqs_worker_and_ours_connected_while_it_loads(
    redis_url: str, viewer: Any
) -> None:
    with (
        worker_process(redis_url, str(PEER), "worker", "emails", "--name", "bull-1"),
        worker_process(redis_url, "-m", "queues", "worker", "emails", "--name", "echo-1"),
    ):
        html = _until_rows(viewer, ["bull-1", "echo-1"])
        body = viewer.get(API + "workers/").json()
        fragment = _html(viewer.get(PAGE, headers={"HX-Request": "true"}))
    assert "2 connected" in html
    assert 'data-poll-url="/queues/bull/emails/workers/"' in html
    assert 'aria-current="page">workers</a>' in html
    assert body["known"] is True
    assert body["count"] == 2
    assert body["nodes"] == []
    by_name = {worker["name"]: worker for worker in body["workers"]}
    assert by_name["bull-1"]["connection_name"] == "bull:emails:w:bull-1"
    assert by_name["echo-1"]["connection_name"] == "bull:ZW1haWxz:w:echo-1"
    assert by_name["bull-1"]["connections"] == 2
    # The polled fragment: the list and the limits, without the page around them.
    assert _rows(fragment) == ["bull-1", "echo-1"]
    assert "<html" not in fragment
    assert "Global concurrency" in fragment
    # Gone when they leave.
    _until_rows(viewer, [])


def test_no_worker_says_so_on_the_tab_and_on_the_overview(viewer: Any) -> None:
    html = _html(viewer.get(PAGE))
    assert "No worker is connected to emails" in html
    overview = _html(viewer.get("/"))
    assert ">no workers</span>" in overview
    assert "1 waiting" in overview


def test_a_connected_worker_turns_no_workers_into_nothing_active(
    redis_url: str, viewer: Any
) -> None:
    with named_connections(redis_url, queue_name_forms("bull", "emails")[0] + ":w:idle-one"):
        overview = _html(viewer.get("/"))
        page = _html(viewer.get("/queues/bull/emails/?state=wait"))
    assert ">nothing active</span>" in overview
    assert "1 worker connected" in overview
    assert "no workers" not in overview
    # The queue page's own health says the same (its header's chart line).
    assert "1 worker connected" in page
    assert "no worker connected" not in page


def test_names_that_only_look_like_a_workers_show_no_worker_and_no_error(
    redis_url: str, viewer: Any
) -> None:
    node_form, python_form = queue_name_forms("bull", "emails")
    lookalikes = [node_form + ":qe", node_form + "X", python_form + "-2:w:x", "bull:"]
    with named_connections(redis_url, *lookalikes):
        html = _html(viewer.get(PAGE))
        body = viewer.get(API + "workers/").json()
    assert _rows(html) == []
    assert body["count"] == 0


def test_the_limits_show_in_words_and_json(dashboard_redis: Redis, viewer: Any) -> None:
    dashboard_redis.hset(KEYS.meta, mapping={"concurrency": "3", "max": "10", "duration": "1000"})
    dashboard_redis.set(KEYS.limiter, 10, px=60_000)
    html = _html(viewer.get(PAGE))
    body = viewer.get(API + "limits/").json()
    assert "3 at once across all workers (0 active now)" in html
    assert "10 jobs per 1 s" in html
    assert "rate-limited</span> until" in html
    assert body["global_concurrency"] == 3
    assert body["rate_limit"] == {"max": 10, "duration_ms": 1000}
    assert 0 < body["rate_limited_ms"] <= 60_000
    assert body["rate_limited_until"] == body["read_at"] + body["rate_limited_ms"]


@pytest.mark.parametrize(
    "fields",
    [
        {"concurrency": "lots", "max": "∞", "duration": "-"},
        {"concurrency": "\x00\xff" * 1000},
        {"concurrency": "9" * 5000},
        {"max": "1e999", "duration": "nan"},
    ],
)
def test_garbage_limits_are_shown_as_stored_never_a_500(
    dashboard_redis: Redis, viewer: Any, fields: dict[str, str]
) -> None:
    dashboard_redis.hset(KEYS.meta, mapping=fields)
    dashboard_redis.set(KEYS.limiter, "many")
    html = _html(viewer.get(PAGE))
    body = viewer.get(API + "limits/").json()
    assert body["global_concurrency"] is None
    assert body["rate_limit"] is None
    assert body["rate_limited_ms"] == 0
    if "concurrency" in fields:
        assert "which is not a number" in html


def test_limit_keys_of_the_wrong_type_are_said_never_a_500(
    dashboard_redis: Redis, viewer: Any
) -> None:
    dashboard_redis.delete(KEYS.meta)
    dashboard_redis.sadd(KEYS.meta, "x")
    html = _html(viewer.get(PAGE))
    assert "is not a hash" in html
    assert viewer.get(API + "limits/").json()["problem"]


def test_setting_and_clearing_global_concurrency_from_the_page_is_audited(
    dashboard_redis: Redis, actor: Any
) -> None:
    page = _html(actor.get(PAGE))
    assert 'name="concurrency"' in page
    assert "data-confirm=" in page
    response = actor.post(ACTION, {"action": "set", "concurrency": "4", "next": PAGE})
    assert response.status_code == 302
    assert response["Location"] == PAGE
    assert dashboard_redis.hget(KEYS.meta, "concurrency") == b"4"
    shown = _html(actor.get(PAGE))
    assert "Global concurrency of emails set to 4 (there was none)" in shown
    assert "4 at once across all workers" in shown
    actor.post(ACTION, {"action": "clear"})
    assert not dashboard_redis.hexists(KEYS.meta, "concurrency")
    entries = list(AuditEntry.objects.order_by("id").values_list("action", "jobs", "result"))
    assert [entry[:2] for entry in entries] == [
        ("set_global_concurrency", "concurrency=4"),
        ("clear_global_concurrency", "concurrency=none"),
    ]
    assert "(it was 4)" in entries[1][2]


def test_the_api_sets_and_clears_global_concurrency(dashboard_redis: Redis, actor: Any) -> None:
    def post(body: Any) -> Any:
        return actor.post(API + "concurrency/", json.dumps(body), content_type="application/json")

    done = post({"concurrency": 2})
    assert done.status_code == 200, done.content
    assert done.json()["action"] == "set_global_concurrency"
    assert dashboard_redis.hget(KEYS.meta, "concurrency") == b"2"
    assert actor.post(API + "concurrency/", {"concurrency": "3"}).status_code == 200
    assert dashboard_redis.hget(KEYS.meta, "concurrency") == b"3"
    cleared = post({"concurrency": None})
    assert cleared.json()["action"] == "clear_global_concurrency"
    assert not dashboard_redis.hexists(KEYS.meta, "concurrency")


@pytest.mark.parametrize(
    "value", [0, -1, 1.5, "abc", "", "1e3", 10**10, True, [], {"n": 1}, "NONE"]
)
def test_bad_limits_are_refused_with_a_400_and_change_nothing(
    dashboard_redis: Redis, actor: Any, value: Any
) -> None:
    dashboard_redis.hset(KEYS.meta, "concurrency", "7")
    response = actor.post(
        API + "concurrency/", json.dumps({"concurrency": value}), content_type="application/json"
    )
    assert response.status_code == 400
    assert response.json()["error"]["code"] == "bad_request"
    assert dashboard_redis.hget(KEYS.meta, "concurrency") == b"7"


def test_a_missing_field_or_an_empty_form_never_clears_the_limit(
    dashboard_redis: Redis, actor: Any
) -> None:
    dashboard_redis.hset(KEYS.meta, "concurrency", "7")
    assert (
        actor.post(API + "concurrency/", "{}", content_type="application/json").status_code == 400
    )
    page = actor.post(ACTION, {"action": "set", "concurrency": ""}, follow=True)
    assert "must be a whole number" in _html(page)
    actor.post(ACTION, {"action": "set"})
    assert dashboard_redis.hget(KEYS.meta, "concurrency") == b"7"


def test_a_corrupt_meta_key_is_a_409_and_stays_as_it_was(
    dashboard_redis: Redis, actor: Any
) -> None:
    dashboard_redis.delete(KEYS.meta)
    dashboard_redis.rpush(KEYS.meta, "x")
    response = actor.post(
        API + "concurrency/", json.dumps({"concurrency": 2}), content_type="application/json"
    )
    assert response.status_code == 409
    assert response.json()["error"]["code"] == "corrupt_key"
    assert dashboard_redis.lrange(KEYS.meta, 0, -1) == [b"x"]
    page = actor.post(ACTION, {"action": "set", "concurrency": "2"}, follow=True)
    assert "Nothing was changed" in _html(page)


def _client_list_calls(client: Redis) -> int:
    stats = client.info("commandstats")
    return int(stats.get("cmdstat_client|list", {}).get("calls", 0))


def _overview_row(client: Any, queue: str) -> str:
    html = _html(client.get("/"))
    start = html.index(f'data-queue="bull:{queue}"')
    return html[start : html.index("</tr>", start)]


def test_the_overview_reads_the_client_list_once_for_all_its_rows_and_not_while_none_waits(
    dashboard_redis: Redis, viewer: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(health_reads, "ABSENCE_MAX_AGE_S", 60.0)  # no second reading here
    for name in ("a", "b", "c"):
        seed_job(dashboard_redis, QueueRef("bull", name).keys, "1")
    _html(viewer.get("/"))
    # Discovery polls CLIENT LIST too, in the background: hold it still.
    discovery.discovery_for(get_client(), ["bull"]).stop()
    time.sleep(0.2)
    forget_client_lists()
    before = _client_list_calls(dashboard_redis)
    html = _html(viewer.get("/"))
    assert html.count(">no workers</span>") == 4  # emails, a, b, c
    assert _client_list_calls(dashboard_redis) - before == 1
    # The live refresh asks again and again: the list read stands for a while.
    for _ in range(5):
        _html(viewer.get("/"))
    assert _client_list_calls(dashboard_redis) - before == 1
    dashboard_redis.flushall()
    seed_job(dashboard_redis, KEYS, "1", state="delayed")
    forget_client_lists()
    before = _client_list_calls(dashboard_redis)
    _html(viewer.get("/"))
    assert _client_list_calls(dashboard_redis) == before


def test_a_client_list_showing_no_worker_is_trusted_a_second_and_one_showing_workers_longer(
    dashboard_redis: Redis, redis_url: str, viewer: Any
) -> None:
    """A worker that just connected must not read as missing for seconds (an
    alarm), while a queue with its workers costs no reading per load."""
    discovery.discovery_for(get_client(), ["bull"]).stop()  # its poll reads the list too
    assert ">no workers</span>" in _overview_row(viewer, "emails")
    with named_connections(redis_url, queue_name_forms("bull", "emails")[0] + ":w:late"):
        time.sleep(health_reads.ABSENCE_MAX_AGE_S + 0.1)
        assert ">nothing active</span>" in _overview_row(viewer, "emails")
        before = _client_list_calls(dashboard_redis)
        for _ in range(3):
            assert "no workers" not in _overview_row(viewer, "emails")
            time.sleep(health_reads.ABSENCE_MAX_AGE_S / 2)
        assert _client_list_calls(dashboard_redis) == before


def test_no_workers_shows_as_soon_as_the_last_worker_leaves_with_its_last_finished_job(
    dashboard_redis: Redis, redis_url: str, viewer: Any
) -> None:
    """Issue 21: 200 jobs waited with no worker connected and the overview said
    nothing until five minutes after the last job had finished."""
    queue = Queue("emails", dashboard_redis)
    for n in range(5):
        queue.add("welcome", {"to": f"user{n}@example.com"})
    with worker_process(redis_url, "-m", "queues", "worker", "emails", "--name", "echo-1"):
        eventually(lambda: queue.get_counts("completed")["completed"] >= 5, timeout=20)
        eventually(lambda: not sum(queue.get_counts("wait", "active").values()), timeout=20)
        forget_client_lists()
        assert "badge" not in _overview_row(viewer, "emails")  # nothing waits
    finished = max(
        int(score) for _, score in dashboard_redis.zrange(KEYS.completed, 0, -1, withscores=True)
    )
    for n in range(200):
        queue.add("welcome", {"to": f"late{n}@example.com"})
    forget_client_lists()  # stands for CLIENT_LIST_MAX_AGE_S going by
    row = _overview_row(viewer, "emails")
    clock = time.strftime("%H:%M UTC", time.gmtime(finished / 1000))
    assert '<span class="badge state-delayed">no workers</span>' in row
    assert f"200 waiting; last job finished just now ({clock})" in row
    page = _html(viewer.get("/queues/bull/emails/?state=wait"))
    assert ">no workers</span>" in page  # the queue page's own health line


def test_a_busy_worker_with_jobs_waiting_and_a_paused_queue_raise_no_alarm(
    dashboard_redis: Redis, redis_url: str, viewer: Any
) -> None:
    """A BullMQ worker on a long job while others wait is there; a paused
    queue waits on purpose; delayed jobs are not late."""
    paused = Queue("held", dashboard_redis)
    paused.add("report", {})
    paused.pause()
    later = Queue("later", dashboard_redis)
    later.add("report", {}, {"delay": 3_600_000})
    queue = Queue("emails", dashboard_redis)
    for n in range(4):
        queue.add("report", {"n": n})
    with worker_process(
        redis_url, str(PEER), "worker", "emails", "--sleep", "60", "--name", "slow"
    ):
        eventually(lambda: queue.get_counts("active")["active"] == 1, timeout=20)
        forget_client_lists()
        rows = {name: _overview_row(viewer, name) for name in ("emails", "held", "later")}
    assert "badge state-delayed" not in rows["emails"], rows["emails"]
    assert "no workers" not in rows["held"]
    assert "no workers" not in rows["later"]
