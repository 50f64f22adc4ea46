"""The threaded HTTP bridge serves the same Django as the test client."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pytest
from django.contrib.auth.models import Permission, User
from redis import Redis

from dashboard.site.http import (
    MAX_WAITING_LOGINS,
    ThreadedDjangoHTTP,
    checks_password,
    wsgi_environ,
)
from queues.read.refs import QueueRef
from tests.dashboard_seed import seed_job


def _scope(method: str, path: str, query: bytes = b"", headers: Any = ()) -> dict[str, Any]:
    return {
        "type": "http",
        "method": method,
        "path": path,
        "query_string": query,
        "headers": [(k.encode(), v.encode()) for k, v in headers],
        "server": ("testserver", 80),
        "client": ("127.0.0.1", 5000),
        "http_version": "1.1",
        "scheme": "http",
    }


async def _call(app: ThreadedDjangoHTTP, scope: dict[str, Any], chunks: list[bytes]) -> Any:
    incoming = [
        {"type": "http.request", "body": chunk, "more_body": i < len(chunks) - 1}
        for i, chunk in enumerate(chunks or [b""])
    ]
    sent: list[dict[str, Any]] = []

    async def receive() -> dict[str, Any]:
        return incoming.pop(0) if incoming else {"type": "http.disconnect"}

    async def send(message: dict[str, Any]) -> None:
        sent.append(message)

    await app(scope, receive, send)
    return sent


def test_environ_follows_wsgi_for_paths_queries_and_repeated_headers() -> None:
    scope = _scope(
        "GET",
        "/queues/bull/ünï/job/a b",
        b"state=failed&x=%C3%BC",
        [("Cookie", "a=1"), ("Cookie", "b=2"), ("Accept", "x"), ("Accept", "y"),
         ("Content-Type", "text/plain")],
    )  # fmt: skip
    environ = wsgi_environ(scope, b"body")
    assert environ["PATH_INFO"] == "/queues/bull/ünï/job/a b".encode().decode("latin-1")
    assert environ["QUERY_STRING"] == "state=failed&x=%C3%BC"
    assert environ["HTTP_COOKIE"] == "a=1; b=2"
    assert environ["HTTP_ACCEPT"] == "x,y"
    assert environ["CONTENT_TYPE"] == "text/plain"
    assert "HTTP_CONTENT_TYPE" not in environ
    assert environ["wsgi.input"].read() == b"body"


@pytest.fixture
def staff(transactional_db: None, dashboard_redis: Redis) -> User:
    user = User.objects.create_user("ann", password="pw-for-ann", is_staff=True)
    user.user_permissions.add(*Permission.objects.filter(content_type__app_label="dashboard"))
    return user


async def test_login_then_pages_through_the_bridge(
    staff: User, dashboard_redis: Redis, settings: Any
) -> None:
    seed_job(dashboard_redis, QueueRef("bull", "emails").keys, "ü 1", state="failed")
    app = ThreadedDjangoHTTP(threads=2)
    login_page = await _call(app, _scope("GET", "/login/"), [])
    assert login_page[0]["status"] == 200
    set_cookies = [v.decode() for k, v in login_page[0]["headers"] if k == b"Set-Cookie"]
    assert set_cookies
    assert not any(c.startswith(" ") for c in set_cookies)
    (csrf_cookie,) = [c for c in set_cookies if c.startswith("csrftoken=")]
    token = csrf_cookie.split(";", 1)[0].split("=", 1)[1]
    body = f"csrfmiddlewaretoken={token}&username=ann&password=pw-for-ann".encode()
    headers = [("Cookie", f"csrftoken={token}"),
               ("Content-Type", "application/x-www-form-urlencoded")]  # fmt: skip
    # The body arrives in two chunks, as a slow client would send it.
    logged_in = await _call(app, _scope("POST", "/login/", headers=headers), [body[:10], body[10:]])
    assert logged_in[0]["status"] == 302, logged_in[1]["body"][:3000]
    session = [
        v.decode().split(";", 1)[0] for k, v in logged_in[0]["headers"] if k == b"Set-Cookie"
    ]
    cookie = "; ".join([f"csrftoken={token}", *session])
    page = await _call(
        app, _scope("GET", "/queues/bull/emails/job/ü 1", headers=[("Cookie", cookie)]), []
    )
    assert page[0]["status"] == 200
    assert b'data-job-state="failed"' in page[1]["body"]
    headers_out = dict(page[0]["headers"])
    assert b"script-src 'self'" in headers_out[b"Content-Security-Policy"]


async def test_static_files_are_served_with_nosniff(dashboard_redis: Redis) -> None:
    app = ThreadedDjangoHTTP(threads=1)
    sent = await _call(app, _scope("GET", "/static/dashboard/dashboard.css"), [])
    assert sent[0]["status"] == 200
    assert b"--st-failed" in sent[1]["body"]
    headers = dict(sent[0]["headers"])
    assert headers[b"X-Content-Type-Options"] == b"nosniff"
    assert headers[b"Content-Type"].startswith(b"text/css")


@pytest.mark.parametrize(
    "path",
    [
        "/static/../dashboard/settings.py",
        "/static/dashboard/../../dashboard/settings.py",
        "/static/%2e%2e/dashboard/settings.py",
        "/static//etc/passwd",
        "/static/dashboard/dashboard.css\x00.py",
        "/static/dashboard/",
        "/static/",
    ],
)
async def test_paths_out_of_static_are_404_and_leak_nothing(
    dashboard_redis: Redis, path: str
) -> None:
    app = ThreadedDjangoHTTP(threads=1)
    sent = await _call(app, _scope("GET", path), [])
    assert sent[0]["status"] == 404
    assert b"SECRET_KEY" not in sent[1]["body"]


async def test_an_oversized_body_is_refused_before_django() -> None:
    app = ThreadedDjangoHTTP(threads=1)
    chunk = b"x" * (1024 * 1024)
    sent = await _call(app, _scope("POST", "/login/"), [chunk] * 6)
    assert sent[0]["status"] == 413
    api = await _call(app, _scope("POST", "/api/queues/bull/emails/bulk/"), [chunk] * 6)
    assert api[0]["status"] == 413
    assert dict(api[0]["headers"])[b"Content-Type"] == b"application/json"
    assert json.loads(api[1]["body"])["error"]["code"] == "body_too_large"


def test_login_posts_and_only_they_go_to_the_login_pool() -> None:
    assert checks_password("POST", "/login/")
    assert not checks_password("GET", "/login/")
    assert not checks_password("POST", "/logout/")
    assert not checks_password("POST", "/api/queues/bull/emails/bulk/")
    assert not checks_password("POST", "/nope/")


async def test_logins_beyond_the_waiting_bound_are_told_to_come_back(
    transactional_db: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    app = ThreadedDjangoHTTP(threads=1)
    monkeypatch.setattr(app.logins, "count", MAX_WAITING_LOGINS)
    sent = await _call(app, _scope("POST", "/login/"), [b"username=a&password=b"])
    assert sent[0]["status"] == 503
    assert dict(sent[0]["headers"])[b"Retry-After"] == b"2"
    page = await _call(app, _scope("GET", "/login/"), [])
    assert page[0]["status"] == 200


async def test_a_client_gone_before_its_body_gets_no_answer() -> None:
    app = ThreadedDjangoHTTP(threads=1)
    sent: list[Any] = []

    async def receive() -> dict[str, Any]:
        return {"type": "http.disconnect"}

    async def send(message: dict[str, Any]) -> None:
        sent.append(message)

    await app(_scope("POST", "/login/"), receive, send)
    assert sent == []


async def test_only_http_scopes(client_as: Callable[..., Any]) -> None:
    with pytest.raises(ValueError, match="http scopes"):
        await ThreadedDjangoHTTP(threads=1)({"type": "websocket"}, None, None)  # type: ignore[arg-type]
