from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pytest
from redis import Redis

from queues.queue import Queue
from queues.read.refs import QueueRef
from tests.dashboard_seed import seed_events, seed_job, seed_jobs

KEYS = QueueRef("bull", "emails").keys
API = "/api/queues/bull/emails/"


@pytest.fixture
def actor(dashboard_redis: Redis, client_as: Callable[[str | None], Any]) -> Any:
    return client_as("actor")


def _post_json(client: Any, url: str, body: Any) -> Any:
    return client.post(url, json.dumps(body), content_type="application/json")


def test_queue_list_has_counts_paused_and_metrics(dashboard_redis: Redis, actor: Any) -> None:
    seed_jobs(dashboard_redis, KEYS, "failed", 2)
    dashboard_redis.lpush(KEYS.metrics_data("failed"), 1, 2)
    body = actor.get("/api/queues/").json()
    (queue,) = body["queues"]
    assert queue["queue"] == "bull:emails"
    assert queue["counts"]["failed"] == 2
    assert queue["paused"] is False
    assert queue["metrics"]["failed_per_minute"] == [1, 2]
    assert actor.get(API).json() == queue


def test_jobs_range_is_inclusive_newest_first(dashboard_redis: Redis, actor: Any) -> None:
    for n in range(1, 11):
        seed_job(dashboard_redis, KEYS, str(n), state="failed", score=n)
    body = actor.get(API + "jobs/", {"state": "failed", "start": 2, "end": 4}).json()
    assert body["total"] == 10
    assert [job["id"] for job in body["jobs"]] == ["8", "7", "6"]
    assert body["jobs"][0]["failed_reason"] == "boom"
    assert (body["start"], body["end"]) == (2, 5)


def test_job_detail_and_events(dashboard_redis: Redis, actor: Any) -> None:
    seed_job(dashboard_redis, KEYS, "j1", state="failed", data={"a": [1, 2]})
    dashboard_redis.rpush(KEYS.logs("j1"), "one", "two")
    seed_events(dashboard_redis, KEYS, [("failed", {"jobId": "j1", "failedReason": "boom"})])
    body = actor.get(API + "job/j1").json()
    assert body["state"] == "failed"
    assert body["data"] == {"a": [1, 2]}
    assert body["logs"] == {"start": 0, "total": 2, "lines": ["one", "two"]}
    assert [e["event"] for e in body["events"]] == ["failed"]
    events = actor.get(API + "events/", {"type": "failed"}).json()
    assert events["events"][0]["job_id"] == "j1"
    assert events["next_before"] is None


@pytest.mark.parametrize(
    ("url", "status", "code"),
    [
        ("/api/queues/bull/nope/", 404, "not_found"),
        ("/api/queues/bull/emails/job/none", 404, "not_found"),
        ("/api/queues/bull/emails/jobs/?state=bogus", 400, "bad_request"),
        ("/api/queues/bull/emails/jobs/?start=5&end=1", 400, "bad_request"),
        ("/api/queues/bull/emails/events/?before=nope", 400, "bad_request"),
    ],
)
def test_read_errors_are_json(
    dashboard_redis: Redis, actor: Any, url: str, status: int, code: str
) -> None:
    seed_job(dashboard_redis, KEYS, "1")
    response = actor.get(url)
    assert response.status_code == status
    assert response.json()["error"]["code"] == code
    assert response.json()["error"]["message"]


def test_retry_then_409_when_already_retried(dashboard_redis: Redis, actor: Any) -> None:
    seed_job(dashboard_redis, KEYS, "5", state="failed")
    ok = _post_json(actor, API + "actions/", {"action": "retry", "ids": ["5"]})
    assert ok.status_code == 200
    assert ok.json()["count"] == 1
    again = _post_json(actor, API + "actions/", {"action": "retry", "id": "5"})
    assert again.status_code == 409
    assert again.json()["error"] == {
        "code": "job_not_in_state",
        "message": "Job 5 is no longer failed — someone retried it already",
    }
    gone = _post_json(actor, API + "actions/", {"action": "promote", "ids": ["ghost"]})
    assert gone.status_code == 404
    assert gone.json()["error"]["code"] == "job_not_exist"


def test_list_actions_report_each_job(dashboard_redis: Redis, actor: Any) -> None:
    queue = Queue("emails", dashboard_redis)
    ids = [queue.add("x", {}, {"delay": 60_000}) for _ in range(2)]
    response = _post_json(actor, API + "actions/", {"action": "promote", "ids": [*ids, "nope"]})
    assert response.status_code == 200
    body = response.json()
    assert body["count"] == 2
    assert [r["ok"] for r in body["results"]] == [True, True, False]


@pytest.mark.parametrize(
    "body",
    [
        "not json",
        {"action": "retry", "ids": "x:y"},
        {"action": "retry", "ids": [1, 2]},
        {"action": "frobnicate", "ids": ["1"]},
        {"action": "retry", "ids": ["1"], "state": "wait"},
    ],
)
def test_bad_action_bodies_are_400(dashboard_redis: Redis, actor: Any, body: Any) -> None:
    seed_job(dashboard_redis, KEYS, "1", state="failed")
    raw = body if isinstance(body, str) else json.dumps(body)
    response = actor.post(API + "actions/", raw, content_type="application/json")
    assert response.status_code == 400
    assert response.json()["error"]["code"] == "bad_request"


def test_bulk_actions(dashboard_redis: Redis, actor: Any) -> None:
    seed_jobs(dashboard_redis, KEYS, "failed", 4)
    response = _post_json(actor, API + "bulk/", {"action": "retry_all"})
    assert response.json()["count"] == 4
    assert _post_json(actor, API + "bulk/", {"action": "pause"}).status_code == 200
    assert actor.get(API).json()["paused"] is True
    bad_age = _post_json(actor, API + "bulk/", {"action": "clean", "grace_ms": "soon"})
    assert bad_age.status_code == 400
    wrong_state = _post_json(
        actor, API + "bulk/", {"action": "clean", "state": "active", "grace_ms": 0}
    )
    assert wrong_state.status_code == 400


def test_form_encoded_posts_work_too(dashboard_redis: Redis, actor: Any) -> None:
    seed_job(dashboard_redis, KEYS, "9", state="failed")
    response = actor.post(API + "actions/", {"action": "retry", "ids": ["9"]})
    assert response.status_code == 200
    assert Queue("emails", dashboard_redis).get_state("9") == "wait"


def test_jobs_and_job_detail_decode_progress_like_the_pages(
    dashboard_redis: Redis, actor: Any
) -> None:
    seed_job(dashboard_redis, KEYS, "s", state="active", fields={"progress": '{"step":1,"of":5}'})
    seed_job(dashboard_redis, KEYS, "o", state="active", fields={"progress": '{"phase":"x"}'})
    jobs = actor.get(API + "jobs/", {"state": "active"}).json()["jobs"]
    bars = {job["id"]: job["progress_bar"] for job in jobs}
    assert bars == {"s": {"percent": 20, "done": 1, "total": 5}, "o": None}
    detail = actor.get(API + "job/s").json()
    assert detail["progress"] == {"step": 1, "of": 5}
    assert detail["progress_bar"] == {"percent": 20, "done": 1, "total": 5}
    assert detail["failed_attempts"] == []
