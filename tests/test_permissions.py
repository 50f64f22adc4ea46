"""Who may see and do what: every role x every page, API call and action."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from redis import Redis

from queues.queue import Queue
from queues.read.refs import QueueRef
from tests.dashboard_seed import seed_job

KEYS = QueueRef("bull", "emails").keys
Q = "/queues/bull/emails/"
API = "/api/queues/bull/emails/"

PAGES = ["/", Q, Q + "?state=failed", Q + "events/", Q + "job/1", Q + "goto/?job=1"]
API_READS = ["/api/queues/", API, API + "jobs/?state=failed", API + "job/1", API + "events/"]
# (url, form data, is_api)
ACTIONS = [
    (Q + "actions/", {"action": "retry", "ids": ["1"], "state": "failed"}, False),
    (Q + "bulk/", {"action": "retry_all", "state": "failed"}, False),
    (API + "actions/", {"action": "retry", "ids": ["1"]}, True),
    (API + "bulk/", {"action": "retry_all"}, True),
]
ROLES = ["anonymous", "nonstaff", "staff_noperm", "viewer", "actor", "superuser", "read_only"]
CAN_VIEW = {"viewer", "actor", "superuser", "read_only"}
CAN_ACT = {"actor", "superuser"}


@pytest.fixture
def as_role(
    dashboard_redis: Redis, client_as: Callable[[str | None], Any], settings: Any
) -> Callable[[str], Any]:
    seed_job(dashboard_redis, KEYS, "1", state="failed")

    def make(role: str) -> Any:
        if role == "read_only":
            settings.ECHOMQ_READ_ONLY = True
            return client_as("actor")
        return client_as(None if role == "anonymous" else role)

    return make


@pytest.mark.parametrize("role", ROLES)
def test_pages(as_role: Callable[[str], Any], role: str) -> None:
    client = as_role(role)
    for url in PAGES:
        response = client.get(url)
        if role == "anonymous":
            assert response.status_code == 302, url
            assert response["Location"].startswith("/login/?next="), url
        elif role in CAN_VIEW:
            assert response.status_code == (302 if "goto" in url else 200), url
        else:
            assert response.status_code == 403, url


@pytest.mark.parametrize("role", ROLES)
def test_api_reads(as_role: Callable[[str], Any], role: str) -> None:
    client = as_role(role)
    expected = 401 if role == "anonymous" else 200 if role in CAN_VIEW else 403
    for url in API_READS:
        response = client.get(url)
        assert response.status_code == expected, url
        if expected != 200:
            assert response.json()["error"]["code"] in ("unauthenticated", "forbidden")


@pytest.mark.parametrize("role", ROLES)
def test_actions(as_role: Callable[[str], Any], role: str, dashboard_redis: Redis) -> None:
    client = as_role(role)
    queue = Queue("emails", dashboard_redis)
    for url, data, is_api in ACTIONS:
        seed_job(dashboard_redis, KEYS, "1", state="failed")
        dashboard_redis.lrem(KEYS.wait, 0, "1")
        response = client.post(url, data)
        if role in CAN_ACT:
            assert response.status_code == (200 if is_api else 302), url
            assert queue.get_state("1") == "wait", url
            continue
        if role == "anonymous":
            assert response.status_code == (401 if is_api else 302), url
        else:
            assert response.status_code == 403, url
        if is_api:
            assert response.json()["error"]["code"] in ("unauthenticated", "forbidden")
        assert queue.get_state("1") == "failed", url


@pytest.mark.parametrize("role", ["viewer", "read_only", "actor"])
def test_action_buttons_only_for_those_who_may_act(
    as_role: Callable[[str], Any], role: str
) -> None:
    client = as_role(role)
    pages = [client.get(url).content.decode() for url in (Q + "?state=failed", Q + "job/1")]
    for html in pages:
        has_buttons = 'name="action"' in html
        assert has_buttons is (role == "actor")
        assert ('name="ids"' in html) is (role == "actor")


def test_read_only_says_why(as_role: Callable[[str], Any]) -> None:
    client = as_role("read_only")
    response = client.post(API + "actions/", {"action": "retry", "ids": ["1"]})
    assert "read-only" in response.json()["error"]["message"]
    assert "read-only" in client.get(Q).content.decode()


def test_login_page_logs_in_and_returns(dashboard_redis: Redis, make_user: Any) -> None:
    from django.test import Client

    user = make_user("viewer", username="ann")
    user.set_password("s3cret-pass")
    user.save()
    client = Client()
    assert client.get("/login/").status_code == 200
    response = client.post("/login/", {"username": "ann", "password": "s3cret-pass", "next": Q})
    assert response.status_code == 302
    assert response["Location"] == Q
    assert client.get("/").status_code == 200
    wrong = Client().post("/login/", {"username": "ann", "password": "nope"})
    assert "Wrong username or password" in wrong.content.decode()
