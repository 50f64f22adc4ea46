"""One viewer's searches cannot slow everyone (issue 22, point 3).

Search steps run in a pool of their own, each session with a bounded number
admitted and the rest refused at once by the HTTP bridge (dashboard.site.http);
a user's searches are capped, a new one stopping the oldest even while its
step runs, and a refused step never waits (dashboard.search.views).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any

import pytest
from django.conf import settings
from django.test import Client
from redis import Redis

from dashboard.search import views as search
from dashboard.site.http import (
    MAX_STEPS_PER_SESSION,
    PAGES_IN_FLIGHT,
    ThreadedDjangoHTTP,
    is_search_step,
    session_key,
)
from queues.read import search as read_search
from queues.read.refs import QueueRef
from tests.dashboard_seed import seed_failed_bulk
from tests.test_views_http import _call, _scope

KEYS = QueueRef("bull", "big").keys
SEARCH = "/api/queues/bull/big/search/"


@pytest.fixture(autouse=True)
def no_searches(monkeypatch: pytest.MonkeyPatch) -> None:
    """No search of an earlier test counts against this one's users."""
    monkeypatch.setattr(search, "SEARCHES", search._Searches())


@pytest.fixture
def failed(dashboard_redis: Redis, monkeypatch: pytest.MonkeyPatch) -> Redis:
    """2,000 failed jobs, searched in steps of one call (so several steps)."""
    seed_failed_bulk(dashboard_redis, KEYS, 2_000)
    monkeypatch.setattr(search, "STEP_MS", 1.0)
    return dashboard_redis


class HeldStep:
    """dashboard.search.views's search_step, made to wait at its first call until
    the search is stopped (or 5 s pass): a step that is still running."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.real = search.search_step
        self.entered = threading.Event()
        self.calls = 0
        monkeypatch.setattr(search, "search_step", self)

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        self.calls += 1
        if self.calls == 1:
            self.entered.set()
            stopped = kwargs.get("stopped") or (lambda: False)
            deadline = time.monotonic() + 5
            while not stopped() and time.monotonic() < deadline:
                time.sleep(0.01)
        return self.real(*args, **kwargs)


@pytest.fixture
def viewer(transactional_db: None, failed: Redis, make_user: Callable[..., Any]) -> Client:
    client = Client()
    client.force_login(make_user("viewer"))
    return client


@pytest.fixture
def in_thread() -> Iterator[Callable[..., Future[Any]]]:
    with ThreadPoolExecutor(2) as pool:
        yield pool.submit


def _start(viewer: Client, query: str) -> Any:
    return viewer.get(SEARCH, {"state": "failed", "q": query})


def test_a_users_third_search_stops_the_oldest_while_its_step_runs(
    viewer: Client, monkeypatch: pytest.MonkeyPatch, in_thread: Callable[..., Future[Any]]
) -> None:
    held = HeldStep(monkeypatch)
    oldest = in_thread(_start, viewer, "data ~ zz1")
    assert held.entered.wait(5)
    second, third = _start(viewer, "data ~ zz2"), _start(viewer, "data ~ zz3")
    assert (second.status_code, third.status_code) == (200, 200)
    stopped = oldest.result(timeout=2)  # not the 5 s the held step waits at most
    assert stopped.status_code == 409
    assert stopped.json()["error"]["code"] == "search_replaced"
    # The two newest go on, each in its own tab.
    for answer in (second, third):
        body = answer.json()
        going_on = {"search": body["search"], "cursor": body["cursor"]}
        next_step = viewer.get(SEARCH, {"state": "failed", "q": body["query"], **going_on})
        assert next_step.status_code == 200


def test_a_second_step_of_one_search_is_refused_at_once(
    viewer: Client, monkeypatch: pytest.MonkeyPatch, in_thread: Callable[..., Future[Any]]
) -> None:
    first = _start(viewer, "data ~ zz1").json()
    going_on = {"state": "failed", "q": "data ~ zz1", "search": first["search"]}
    held = HeldStep(monkeypatch)
    running = in_thread(viewer.get, SEARCH, {**going_on, "cursor": first["cursor"]})
    assert held.entered.wait(5)
    began = time.monotonic()
    again = viewer.get(SEARCH, {**going_on, "cursor": first["cursor"]})
    waited = time.monotonic() - began
    assert again.status_code == 429
    assert again.json()["error"]["code"] == "search_busy"
    assert waited < 0.5, f"the refused step waited {waited:.2f} s"
    _start(viewer, "data ~ zz2")
    _start(viewer, "data ~ zz3")  # replaces the held one, which then answers
    assert running.result(timeout=5).status_code == 409


def test_a_finished_search_is_forgotten(viewer: Client) -> None:
    step = _start(viewer, "id = 7").json()  # by id: one step, done
    assert step["done"]
    assert search.SEARCHES._by_user == {}


def test_search_urls_are_search_steps_and_nothing_else() -> None:
    for path in (
        "/api/queues/bull/emails/search/",
        "/queues/bull/emails/search/",
        "/api/c/staging/queues/bull/emails/search/",
        "/c/staging/queues/bull/emails/search/",
    ):
        assert is_search_step("GET", path), path
        assert not is_search_step("POST", path), path
    for path in (
        "/queues/bull/emails/job/search/",  # a job whose id ends so
        "/api/queues/bull/emails/job/a/search/",
        "/api/queues/bull/emails/search/act/",
        "/api/queues/",
        "/nope/search/",
    ):
        assert not is_search_step("GET", path), path


@pytest.fixture
def cookies(viewer: Client, make_user: Callable[..., Any]) -> list[str]:
    """The Cookie headers of two viewers' sessions."""
    found = []
    for name in ("ann", "bob"):
        client = Client()
        client.force_login(make_user("viewer", name))
        session = client.cookies[settings.SESSION_COOKIE_NAME].value
        found.append(f"{settings.SESSION_COOKIE_NAME}={session}")
    return found


def _search_scope(cookie: str, query: str = "q=data+~+zz1&state=failed") -> dict[str, Any]:
    return _scope("GET", SEARCH, query.encode(), [("Cookie", cookie)])


async def test_search_steps_run_in_a_pool_of_their_own(
    cookies: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    threads: list[str] = []
    real = search.search_step

    def recording(*args: Any, **kwargs: Any) -> Any:
        threads.append(threading.current_thread().name)
        return real(*args, **kwargs)

    monkeypatch.setattr(search, "search_step", recording)
    app = ThreadedDjangoHTTP(threads=1)
    sent = await _call(app, _search_scope(cookies[0]), [])
    assert sent[0]["status"] == 200
    assert threads
    assert threads[0].startswith("django-search"), threads


async def test_a_session_with_its_steps_admitted_is_refused_at_once_others_are_served(
    cookies: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    busy, other = cookies
    app = ThreadedDjangoHTTP(threads=1)
    scope = _search_scope(busy)
    monkeypatch.setitem(
        app.search_steps.admitted, session_key(scope), MAX_STEPS_PER_SESSION
    )  # as many running as it may
    steps = []
    monkeypatch.setattr(search, "search_step", lambda *a, **k: steps.append(1))
    sent = await _call(app, scope, [])
    assert sent[0]["status"] == 429
    assert dict(sent[0]["headers"])[b"Content-Type"] == b"application/json"
    assert b'"search_busy"' in sent[1]["body"]
    assert steps == []  # refused before any thread ran it
    monkeypatch.undo()
    served = await _call(app, _search_scope(other), [])
    assert served[0]["status"] == 200
    assert app.search_steps.admitted == {}  # each admitted step let go when answered


def test_a_search_step_gives_way_while_the_pages_pool_serves_a_request(
    viewer: Client, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Between its calls a step waits (up to MAX_YIELD_S) while a page or API
    request is being served, so that request's commands do not queue in Redis
    behind the search's."""
    calls: list[int] = []
    real = read_search.scripts.run

    def counted(*args: Any, **kwargs: Any) -> Any:
        calls.append(1)
        return real(*args, **kwargs)

    monkeypatch.setattr(read_search.scripts, "run", counted)
    monkeypatch.setattr(search, "STEP_MS", 100.0)
    monkeypatch.setattr(search, "MAX_YIELD_S", 0.2)  # a rest behind pages outlasts the step

    def step_calls(pages_in_flight: int) -> int:
        monkeypatch.setattr(PAGES_IN_FLIGHT, "count", pages_in_flight)
        calls.clear()
        assert _start(viewer, "data ~ zz1").status_code == 200
        return len(calls)

    alone, behind_pages = step_calls(0), step_calls(1)
    assert alone >= 2  # 200 jobs, then 400 or so, each call ~3 ms and a 2 ms rest
    assert behind_pages == 1
