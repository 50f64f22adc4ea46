"""Every answer under /api/ is JSON with the documented error shape, whoever
answers (our views, Django's CSRF check, method decorators, the URL resolver,
the HTTP bridge) and whatever the input; bad input is a 4xx, never a 5xx."""

from __future__ import annotations

import http.client
import json
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from django.test import Client
from redis import Redis

from queues.queue import Queue
from queues.read.refs import QueueRef
from tests.dashboard_seed import seed_job, seed_jobs
from tests.e2e.server import DashboardServer, free_port, login_cookie, prepare

KEYS = QueueRef("bull", "emails").keys
API = "/api/queues/bull/emails/"


def assert_api_error(response: Any, status: int, code: str) -> dict[str, Any]:
    assert response.status_code == status, response.content[:500]
    assert response["Content-Type"] == "application/json"
    error: dict[str, Any] = response.json()["error"]
    assert set(error) == {"code", "message"}
    assert error["code"] == code
    assert isinstance(error["message"], str)
    assert error["message"]
    return error


@pytest.fixture
def actor(dashboard_redis: Redis, client_as: Callable[[str | None], Any]) -> Any:
    seed_job(dashboard_redis, KEYS, "1", state="failed")
    return client_as("actor")


def test_a_post_without_csrf_token_is_a_json_403_that_says_why(
    dashboard_redis: Redis, make_user: Any
) -> None:
    seed_job(dashboard_redis, KEYS, "1", state="failed")
    client = Client(enforce_csrf_checks=True)
    for who in ("anonymous", "actor"):
        if who == "actor":
            client.force_login(make_user("actor"))
        response = client.post(API + "actions/", {"action": "retry", "ids": ["1"]})
        error = assert_api_error(response, 403, "csrf_failed")
        assert error["message"].startswith("CSRF check failed: CSRF cookie not set. Send the ")
        assert "X-CSRFToken" in error["message"]
        assert ".." not in error["message"]
    assert Queue("emails", dashboard_redis).get_counts("failed")["failed"] == 1


def test_a_page_post_without_csrf_token_gets_our_page(
    dashboard_redis: Redis, make_user: Any
) -> None:
    client = Client(enforce_csrf_checks=True)
    client.force_login(make_user("actor"))
    response = client.post("/queues/bull/emails/actions/", {"action": "retry", "ids": ["1"]})
    assert response.status_code == 403
    assert response["Content-Type"].startswith("text/html")
    page = response.content.decode()
    assert "(CSRF check failed: CSRF cookie not set). Reload the page and try again." in page


@pytest.mark.parametrize(
    ("method", "url", "allowed"),
    [
        ("post", "/api/queues/", "GET"),
        ("put", API, "GET"),
        ("delete", API + "job/1", "GET"),
        ("get", API + "actions/", "POST"),
        ("patch", API + "bulk/", "POST"),
    ],
)
def test_a_wrong_method_is_a_json_405_naming_the_right_one(
    actor: Any, method: str, url: str, allowed: str
) -> None:
    response = getattr(actor, method)(url)
    error = assert_api_error(response, 405, "method_not_allowed")
    assert response["Allow"] == allowed
    assert allowed in error["message"]


@pytest.mark.parametrize(
    "url", ["/api/", "/api/nope", "/api/queues/bull/emails/nope/", "/api/queues/bull/"]
)
def test_an_unknown_api_path_is_a_json_404(actor: Any, url: str) -> None:
    assert_api_error(actor.get(url), 404, "not_found")


@pytest.mark.parametrize(
    ("url", "location"),
    [
        ("/api/queues/bull/emails", "/api/queues/bull/emails/"),
        # Found by the HTTP fuzz: ".." segments are a queue's prefix and name.
        ("/api/queues/..%2F..", "/api/queues/../../"),
    ],
)
def test_a_path_missing_its_slash_is_redirected_in_json(
    actor: Any, url: str, location: str
) -> None:
    """Django's APPEND_SLASH answers an HTML redirect: under the API it is JSON."""
    response = actor.get(url)
    assert response.status_code == 301
    assert response["Content-Type"] == "application/json"
    assert response["Location"] == location
    assert response.json() == {"redirect": location}


def test_unknown_paths_elsewhere_stay_pages(actor: Any) -> None:
    response = actor.get("/nope/")
    assert response.status_code == 404
    assert response["Content-Type"].startswith("text/html")


def test_a_crash_under_the_api_is_a_json_500(actor: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    from queues.read import counts

    def crash(*args: Any, **kwargs: Any) -> Any:
        raise RuntimeError("a bug")

    monkeypatch.setattr(counts, "queue_summaries", crash)
    actor.raise_request_exception = False
    assert_api_error(actor.get("/api/queues/"), 500, "server_error")
    page = actor.get("/")
    assert page.status_code == 500
    assert page["Content-Type"].startswith("text/html")


def test_a_body_over_djangos_limit_is_a_json_413(actor: Any, settings: Any) -> None:
    settings.DATA_UPLOAD_MAX_MEMORY_SIZE = 1000
    body = json.dumps({"action": "retry", "ids": ["1"] * 500})
    response = actor.post(API + "actions/", body, content_type="application/json")
    assert_api_error(response, 413, "body_too_large")


@pytest.mark.parametrize(
    ("body", "content_type"),
    [
        ("[" * 100_000, "application/json"),
        ('{"a": ' + "[" * 5000 + "]" * 5000 + "}", "application/json"),
        ('{"action": "clean", "state": "failed", "grace_ms": Infinity}', "application/json"),
        ('{"action": "clean", "state": "failed", "grace_ms": -Infinity}', "application/json"),
        ('{"action": "clean", "state": "failed", "grace_ms": NaN}', "application/json"),
        ('{"action": "clean", "state": "failed", "grace_ms": 1e400}', "application/json"),
        ('{"action": "clean", "state": "failed", "grace_ms": 1.5}', "application/json"),
        ('{"action": "clean", "state": "failed", "grace_ms": true}', "application/json"),
        (
            '{"action": "clean", "state": "failed", "grace_ms": ' + "9" * 5000 + "}",
            "application/json",
        ),
        (
            '{"action": "clean", "state": "failed", "grace_ms": 99999999999999999999}',
            "application/json",
        ),
        ('{"action": "clean", "state": "failed", "grace_ms": -5}', "application/json"),
        ('{"action": ["retry_all"]}', "application/json"),
        ('{"action": {"a": 1}, "state": [1]}', "application/json"),
        ('{"action": "retry_all", "state": ' + "[" * 900 + "]" * 900 + "}", "application/json"),
        (b"\xff\xfe\x00{", "application/json"),
        ("action=clean&state=failed&grace_ms=1e400", "application/x-www-form-urlencoded"),
        ("action=clean&state=failed&grace_ms=%00", "application/x-www-form-urlencoded"),
        ("--x\r\nContent-Disposition: form-data\r\n\r\n", "multipart/form-data; boundary=x"),
        ("--x", "multipart/form-data"),
    ],
)
def test_bad_bulk_bodies_are_4xx_and_move_nothing(
    actor: Any, dashboard_redis: Redis, body: str | bytes, content_type: str
) -> None:
    seed_jobs(dashboard_redis, KEYS, "completed", 3)
    queue = Queue("emails", dashboard_redis)
    before = queue.get_counts()
    response = actor.post(API + "bulk/", body, content_type=content_type)
    assert 400 <= response.status_code < 500, response.content[:300]
    assert_api_error(response, response.status_code, response.json()["error"]["code"])
    assert queue.get_counts() == before


@pytest.mark.parametrize(
    "body",
    [
        {"action": "retry", "ids": ["1"], "state": ["failed"]},
        {"action": "retry", "ids": ["1"], "reason": {"x": 1}},
        {"action": "retry", "ids": ["1" * 100_000]},
        {"action": "retry", "ids": ["a\x00b"]},
        {"action": "retry", "ids": ["\ud800"]},
        {"action": "retry", "ids": [str(n) for n in range(501)]},
        {"action": 1, "ids": ["1"]},
    ],
)
def test_bad_job_action_bodies_are_400_and_move_nothing(
    actor: Any, dashboard_redis: Redis, body: Any
) -> None:
    queue = Queue("emails", dashboard_redis)
    before = queue.get_counts()
    raw = json.dumps(body)
    response = actor.post(API + "actions/", raw, content_type="application/json")
    assert_api_error(response, 400, "bad_request")
    assert queue.get_counts() == before


def test_a_grace_given_as_digits_or_an_integer_still_cleans(
    actor: Any, dashboard_redis: Redis
) -> None:
    # Ids after the actor fixture's failed job 1: one id in two states is broken.
    seed_jobs(dashboard_redis, KEYS, "completed", 3, first=2)
    for grace in (0, "0"):
        body = json.dumps({"action": "clean", "state": "completed", "grace_ms": grace})
        response = actor.post(API + "bulk/", body, content_type="application/json")
        assert response.status_code == 200, response.content
    assert Queue("emails", dashboard_redis).get_counts("completed")["completed"] == 0


@pytest.mark.parametrize(
    "url",
    [
        API + "jobs/?start=" + "9" * 5000,
        API + "jobs/?start=-5&end=" + "9" * 30,
        API + "jobs/?state=%00",
        API + "job/1?logs_start=-1&logs_size=99999999999999999999",
        API + "job/" + "x" * 100_000,
        API + "job/a%00b",
        API + "events/?before=18446744073709551616-0",
        API + "events/?before=%00&count=-1",
        API + "events/?type=" + "x" * 10_000 + "&job=%ff",
        "/api/queues/bull/%00/",
        "/api/queues/bull/" + "q" * 10_000 + "/",
        "/api/queues/%ED%A0%80/emails/",
        "/api/queues/bull/~x~/jobs/",
    ],
)
def test_odd_reads_are_answered_in_json_without_a_5xx(actor: Any, url: str) -> None:
    response = actor.get(url)
    assert response.status_code < 500
    assert response["Content-Type"] == "application/json"
    if response.status_code >= 400:
        assert_api_error(response, response.status_code, response.json()["error"]["code"])


def test_half_a_character_in_a_reason_is_refused_not_sent_to_redis(
    actor: Any, dashboard_redis: Redis
) -> None:
    seed_job(dashboard_redis, KEYS, "2", state="wait")
    body = json.dumps({"action": "fail", "ids": ["2"], "reason": "\ud800"})
    response = actor.post(API + "actions/", body, content_type="application/json")
    assert_api_error(response, 400, "bad_request")
    assert Queue("emails", dashboard_redis).get_counts("wait")["wait"] == 1


@pytest.fixture
def daphne(redis_client: Redis, redis_url: str, tmp_path: Path) -> Iterator[DashboardServer]:
    """The dashboard as ./run.sh serves it: daphne, in a process of its own."""
    server = DashboardServer(prepare(redis_url, tmp_path), free_port(), tmp_path / "daphne.log")
    server.start()
    yield server
    server.stop()


def test_a_multipart_body_without_a_boundary_is_answered_in_json_under_daphne(
    daphne: DashboardServer,
) -> None:
    """Twisted, under daphne, refused it with an empty 400 before the app ran
    (issue 22, point 12); now it reaches Django like any other body."""
    cookie = login_cookie(daphne.url)
    token = cookie.split("csrftoken=", 1)[1].split(";", 1)[0]
    expected = {"": (403, "csrf_failed"), cookie: (400, "bad_request")}
    for sent_cookie, (status, code) in expected.items():
        headers = {"Content-Type": "multipart/form-data"}
        if sent_cookie:
            headers |= {"Cookie": sent_cookie, "X-CSRFToken": token}
        connection = http.client.HTTPConnection("127.0.0.1", daphne.port, timeout=10)
        body = b"--x\r\nContent-Disposition: form-data\r\n\r\n"
        connection.request("POST", API + "actions/", body=body, headers=headers)
        response = connection.getresponse()
        answer = response.read()
        connection.close()
        assert response.getheader("Content-Type") == "application/json", (response.status, answer)
        assert (response.status, json.loads(answer)["error"]["code"]) == (status, code)
