"""Who may see and do what: every role x every page, API call and action."""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

import pytest
from redis import Redis

from queues.queue import Queue
from queues.read.error_folding import fold, group_key
from queues.read.refs import QueueRef
from tests.dashboard_seed import seed_job

KEYS = QueueRef("bull", "emails").keys
Q = "/queues/bull/emails/"
API = "/api/queues/bull/emails/"

# The error group of the seeded failed job (reason "boom").
GROUP = group_key(fold("boom"))
PAGES = [
    "/",
    Q,
    Q + "?state=failed",
    Q + "events/",
    Q + "job/1",
    Q + "goto/?job=1",
    Q + "workers/",
    Q + "errors/",
    Q + f"errors/?group={GROUP}",
]
API_READS = [
    "/api/queues/",
    API,
    API + "jobs/?state=failed",
    API + "job/1",
    API + "events/",
    API + "workers/",
    API + "limits/",
    API + "search/?state=failed&q=name+~+task",
    API + "errors/",
    API + f"errors/{GROUP}/jobs/",
]
# (url, form data, is_api)
ACTIONS = [
    (Q + "actions/", {"action": "retry", "ids": ["1"], "state": "failed"}, False),
    (Q + "bulk/", {"action": "retry_all", "state": "failed"}, False),
    (API + "actions/", {"action": "retry", "ids": ["1"]}, True),
    (API + "bulk/", {"action": "retry_all"}, True),
    (API + "search/act/", {"action": "retry", "ids": ["1"], "state": "failed"}, True),
    (Q + "errors/actions/", {"action": "retry", "group": GROUP}, False),
    (API + "errors/actions/", {"action": "retry", "group": GROUP}, True),
]
ROLES = [
    "anonymous",
    "nonstaff",
    "staff_noperm",
    "viewer",
    "actor",
    "editor",
    "superuser",
    "read_only",
    "read_only_editor",
]
CAN_VIEW = {"viewer", "actor", "editor", "superuser", "read_only", "read_only_editor"}
CAN_ACT = {"actor", "superuser"}
# dashboard.change_jobs: edit a job's data, duplicate a job, add a job. Not
# the actor's: changing a job is granted apart from acting on it.
CAN_CHANGE = {"editor", "superuser"}
# (url, form data, is_api, what the change did to job 1 or the queue)
CHANGES = [
    (Q + "edit/", {"id": "1", "data": '{"edited": "page"}'}, False),
    (Q + "duplicate/", {"id": "1"}, False),
    (Q + "add/", {"name": "added", "data": "{}"}, False),
    (API + "edit/", {"id": "1", "data": '{"edited": "api"}'}, True),
    (API + "duplicate/", {"id": "1"}, True),
    (API + "add/", {"name": "added", "data": "{}"}, True),
]


@pytest.fixture
def as_role(
    dashboard_redis: Redis, client_as: Callable[[str | None], Any], settings: Any
) -> Callable[[str], Any]:
    seed_job(dashboard_redis, KEYS, "1", state="failed")

    def make(role: str) -> Any:
        if role.startswith("read_only"):
            settings.ECHOMQ_READ_ONLY = True
            return client_as("editor" if role == "read_only_editor" else "actor")
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


def _acted(response: Any, role: str, url: str, is_api: bool) -> bool:
    """Whether the answer says the action ran, checking it is the one the
    role must get: done for those who may act, refused for everyone else."""
    if role in CAN_ACT:
        assert response.status_code == (200 if is_api else 302), url
        return True
    if role == "anonymous":
        assert response.status_code == (401 if is_api else 302), url
    else:
        assert response.status_code == 403, url
    if is_api:
        assert response.json()["error"]["code"] in ("unauthenticated", "forbidden")
    return False


@pytest.mark.parametrize("role", ROLES)
def test_actions(as_role: Callable[[str], Any], role: str, dashboard_redis: Redis) -> None:
    client = as_role(role)
    queue = Queue("emails", dashboard_redis)
    for url, data, is_api in ACTIONS:
        seed_job(dashboard_redis, KEYS, "1", state="failed")
        dashboard_redis.lrem(KEYS.wait, 0, "1")
        acted = _acted(client.post(url, data), role, url, is_api)
        assert queue.get_state("1") == ("wait" if acted else "failed"), url


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
    groups = client.get(Q + "errors/").content.decode()
    assert "boom" in groups
    assert ('form="group-retry"' in groups) is (role == "actor")
    assert ('form="group-remove"' in groups) is (role == "actor")


@pytest.mark.parametrize("role", ROLES)
def test_changes_to_jobs(as_role: Callable[[str], Any], role: str, dashboard_redis: Redis) -> None:
    client = as_role(role)
    queue = Queue("emails", dashboard_redis)
    for url, data, is_api in CHANGES:
        seed_job(dashboard_redis, KEYS, "1", state="failed", data={"edited": "no"})
        jobs_before = int(dashboard_redis.get(KEYS.id) or 0)
        response = client.post(url, data)
        job = queue.get_job("1")
        assert job is not None
        added = int(dashboard_redis.get(KEYS.id) or 0) - jobs_before
        if role in CAN_CHANGE:
            assert response.status_code == ((201 if "edit" not in url else 200) if is_api else 302)
            if "edit" in url:
                assert job.data == {"edited": "api" if is_api else "page"}, url
            else:
                assert added == 1, url
            continue
        if role == "anonymous":
            assert response.status_code == (401 if is_api else 302), url
        else:
            assert response.status_code == 403, url
        if is_api:
            error = response.json()["error"]
            assert error["code"] in ("unauthenticated", "forbidden")
            if role in ("actor", "viewer"):
                assert "dashboard.change_jobs" in error["message"]
            if role.startswith("read_only"):
                assert "read-only" in error["message"]
        assert job.data == {"edited": "no"}, url
        assert added == 0, url


@pytest.mark.parametrize("role", ["viewer", "actor", "editor", "read_only_editor"])
def test_editor_duplicate_and_add_forms_only_for_those_who_may_change(
    as_role: Callable[[str], Any], role: str
) -> None:
    client = as_role(role)
    job_page = client.get(Q + "job/1").content.decode()
    queue_page = client.get(Q).content.decode()
    may = role == "editor"
    assert ("data-json-editor" in job_page) is may
    assert ('action="/queues/bull/emails/duplicate/"' in job_page) is may
    assert ('action="/queues/bull/emails/add/"' in queue_page) is may
    # Acting and changing are apart: the editor gets no retry button.
    assert ('name="action"' in job_page) is (role == "actor")


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


# (url, form data, is_api): setting the global concurrency, by page and by API.
LIMIT_ACTIONS = [
    (Q + "concurrency/", {"action": "set", "concurrency": "3"}, False),
    (API + "concurrency/", {"concurrency": "3"}, True),
]


@pytest.mark.parametrize("role", ROLES)
def test_global_concurrency_is_an_action(
    as_role: Callable[[str], Any], role: str, dashboard_redis: Redis
) -> None:
    client = as_role(role)
    for url, data, is_api in LIMIT_ACTIONS:
        dashboard_redis.hdel(KEYS.meta, "concurrency")
        acted = _acted(client.post(url, data), role, url, is_api)
        stored = dashboard_redis.hget(KEYS.meta, "concurrency")
        assert stored == (b"3" if acted else None), url


@pytest.mark.parametrize("role", ["viewer", "read_only", "actor"])
def test_the_concurrency_form_only_for_those_who_may_act(
    as_role: Callable[[str], Any], role: str
) -> None:
    html = as_role(role).get(Q + "workers/").content.decode()
    assert ('name="concurrency"' in html) is (role == "actor")


@pytest.mark.parametrize("role", ROLES)
def test_the_pages_search_steps_are_a_read(as_role: Callable[[str], Any], role: str) -> None:
    response = as_role(role).get(Q + "search/", {"state": "failed", "q": "id = 1"})
    if role == "anonymous":
        assert response.status_code == 302
    elif role in CAN_VIEW:
        assert response.status_code == 200
        assert response.json()["hits"] == ["1"]
    else:
        assert response.status_code == 403


@pytest.mark.parametrize("role", ["viewer", "read_only", "actor", "editor"])
def test_the_search_box_for_every_viewer_its_actions_only_for_those_who_may_act(
    as_role: Callable[[str], Any], role: str
) -> None:
    html = as_role(role).get(Q + "?state=failed").content.decode()
    assert "data-search-form" in html
    assert ("data-search-act" in html) is (role == "actor")


def test_a_refused_request_is_logged_in_one_line(
    as_role: Callable[[str], Any], caplog: pytest.LogCaptureFixture
) -> None:
    """Django logged each 403 with its whole traceback, at WARNING (issue 22)."""
    viewer = as_role("viewer")
    with caplog.at_level(logging.WARNING, logger="django.request"):
        answer = viewer.post("/queues/bull/emails/bulk/", {"action": "pause"})
    assert answer.status_code == 403
    (record,) = (r for r in caplog.records if r.name == "django.request")
    assert record.getMessage() == "Forbidden (Permission denied): /queues/bull/emails/bulk/"
    assert record.exc_info is None
    assert "Traceback" not in caplog.text
