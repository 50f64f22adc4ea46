"""What each part of a deployment does with Redis, for the tests of a Redis
topology's users and connections (tests/test_acl.py: each as its ACL user;
tests/test_tls.py: over TLS).

Two roles (three ACL users in docs/deploy.md: a dashboard that acts and one
that only reads):

- ``worker_flow``: an application's producer and our worker. Jobs added one
  by one and in bulk, delayed, prioritized, with attempts and a backoff, a
  flow (a parent and two children), a job scheduler; the worker (metrics on,
  a rate limit, a short lock so it renews) completes most, fails some for
  good, retries one, reports progress and logs, runs the scheduler's job
  and the flow, checks for stalled jobs.
- ``dashboard_flow``: the dashboard a person uses: every page and every API
  read of that queue (overview, each tab, the job pages, events, workers,
  schedulers, error groups, search, history, the metrics for Prometheus,
  the live socket, the history collector); with ``act`` also its actions
  (retry, promote, pause and resume, fail, remove, clean, retry all, the
  global concurrency, a job's data, adding a job, an error group's retry,
  a search's retry) through the forms and the API.

Each flow asserts what it sees (nothing answers 500, the actions move what
they say), so a command the role's user may not run, or a connection that
does not hold, fails the test that runs it.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Callable
from typing import Any

from asgiref.sync import sync_to_async
from channels.testing import WebsocketCommunicator
from django.test import Client
from redis import Redis

from dashboard.history.collector import _collector as dashboard_collector
from dashboard.live.consumer import LiveConsumer
from dashboard.live.hub import close_hubs
from queues.commands.transitions import RateLimit
from queues.connection import connect
from queues.flow import FlowJob, FlowProducer
from queues.job import Job
from queues.queue import Queue
from queues.read.states import STATES
from queues.schedulers import JobSchedulers, Repeat
from queues.worker import UnrecoverableError, Worker

QUEUE = "receipts"
PAGE = f"/queues/bull/{QUEUE}/"
API = f"/api/queues/bull/{QUEUE}/"
METRICS_TOKEN = "prometheus-" + "t" * 24
REASONS = (
    "card declined: insufficient funds (order ord_7c1e9a0b3f)",
    "gateway timeout after 30412 ms (order ord_d3587f749c)",
    "gateway timeout after 30007 ms (order ord_5be1c09a2f)",
)


async def worker_flow(url: str) -> dict[str, str]:
    """Add and process the queue's jobs as the worker user; the ids of note."""
    client = connect(url)
    queue = Queue(QUEUE, client)
    ids = queue.add_bulk(
        [("send-receipt", {"n": n, "to": f"user{n}@example.com"}, None) for n in range(12)]
    )
    failing = [queue.add("charge-card", {"reason": reason}) for reason in REASONS]
    retried = queue.add("charge-card", {"flaky": True}, {"attempts": 2, "backoff": 10})
    slow = queue.add("render-invoice", {"seconds": 1.2})
    delayed = queue.add("remind", {"n": 1}, {"delay": 3_600_000})
    queue.add("send-receipt", {"n": 99}, {"priority": 3, "delay": 3_600_000})
    flow = FlowProducer(client).add(
        FlowJob(
            "ship-order",
            QUEUE,
            {"order": "ord_3f9a2c71d0"},
            children=[FlowJob("pick", QUEUE, {"sku": "A-1"}), FlowJob("pack", QUEUE, {"box": 2})],
        )
    )
    # Its first run is due now: the worker takes it and schedules the next.
    JobSchedulers(QUEUE, client).upsert("nightly-report", Repeat(every_ms=3_600_000), name="report")
    seen: list[str] = []

    async def process(job: Job) -> Any:
        seen.append(job.id)
        await worker.update_progress(job, 50)
        await worker.add_log(job, f"processing {job.name}")
        if "reason" in job.data:
            raise UnrecoverableError(job.data["reason"])
        if job.data.get("flaky") and job.attempts_made == 0:
            raise RuntimeError("connection reset by peer")
        if "seconds" in job.data:
            await asyncio.sleep(job.data["seconds"])  # past half the lock: renewed
        if job.name == "ship-order":
            return await worker.children_values(job)
        return {"sent": True}

    worker = Worker(
        QUEUE,
        process,
        connection_url=url,
        concurrency=3,
        metrics=True,
        limiter=RateLimit(100, 1000),
        lock_duration_ms=1000,
        drain_delay_s=0.2,
    )
    running = asyncio.create_task(worker.run())
    # The bulk, the retried, the slow, the flow's three and the scheduler's run.
    completed = len(ids) + 1 + 1 + 3 + 1
    deadline = time.monotonic() + 30
    while queue.get_counts("completed", "failed") != {"completed": completed, "failed": 3}:
        assert time.monotonic() < deadline, queue.get_counts()
        await asyncio.sleep(0.05)
    await worker.check_stalled()
    await worker.close()
    await running
    assert queue.get_state(slow) == "completed"
    assert queue.get_state(flow.id) == "completed"
    assert queue.get_state(retried) == "completed"
    assert queue.get_counts("delayed")["delayed"] == 3  # the scheduler's next run among them
    client.close()
    return {
        "failed": failing[0],
        "other_failed": failing[1],
        "delayed": delayed,
        "completed": ids[0],
        "parent": flow.id,
    }


def _ok(answer: Any, path: str) -> Any:
    assert answer.status_code < 400, (path, answer.status_code, answer.content[:500])
    return answer


def read_everything(client: Client, ids: dict[str, str]) -> dict[str, Any]:
    """Every page and API read of the queue; what the flows after it need."""
    paths = [
        "/",
        "/?sort=failed",
        "/history/last-hour/",
        PAGE,
        *(f"{PAGE}?state={state}" for state in STATES),
        PAGE + "events/",
        PAGE + "workers/",
        PAGE + "history/",
        PAGE + "schedulers/",
        PAGE + "errors/",
        PAGE + "cohorts/",
        PAGE + f"goto/?id={ids['completed']}",
        *(PAGE + f"job/{ids[name]}" for name in ("failed", "completed", "parent", "delayed")),
        PAGE + f"flow-children/{ids['parent']}",
        "/api/queues/",
        API,
        *(f"{API}jobs/?state={state}" for state in STATES),
        API + "events/",
        API + f"job/{ids['failed']}",
        API + f"flow/{ids['parent']}",
        API + "workers/",
        API + "limits/",
        API + "schedulers/",
        API + "errors/",
        API + "cohorts/",
    ]
    for path in paths:
        _ok(client.get(path), path)
    groups = _wait_for_groups(client)
    for group in groups:
        _ok(client.get(f"{API}errors/{group['key']}/jobs/"), "group jobs")
    query = {"state": "failed", "q": "reason ~ timeout"}
    search = _ok(client.get(API + "search/", query), "search")
    metrics = client.get("/metrics", HTTP_AUTHORIZATION=f"Bearer {METRICS_TOKEN}")
    _ok(metrics, "/metrics")
    assert b"echomq_queue_jobs" in metrics.content
    return {"groups": groups, "search": search.json()}


def _wait_for_groups(client: Client) -> list[dict[str, Any]]:
    """The failed tab's error groups, once the dashboard has counted them."""
    deadline = time.monotonic() + 15
    while True:
        answer = _ok(client.get(API + "errors/"), "errors").json()
        if answer["complete"] and answer["indexed"] == answer["failed"]:
            groups: list[dict[str, Any]] = answer["groups"]
            return groups
        assert time.monotonic() < deadline, answer
        time.sleep(0.1)


def act_on_everything(client: Client, ids: dict[str, str], redis: Redis) -> None:
    """Every kind of action, through the forms and the API; each moves what it says."""
    queue = Queue(QUEUE, redis)
    post = _json_poster(client)
    # An error group's retry, then a search's: each job through its own script.
    (group,) = [g for g in _wait_for_groups(client) if "card declined" in g["text"]]
    post(API + "errors/actions/", {"action": "retry", "group": group["key"]})
    assert queue.get_state(ids["failed"]) == "wait"
    found = client.get(API + "search/", {"state": "failed", "q": "reason ~ timeout"}).json()
    matched = [row["id"] for row in found["rows"]]
    assert ids["other_failed"] in matched, found
    post(API + "search/act/", {"action": "retry", "state": "failed", "ids": matched})
    assert queue.get_state(ids["other_failed"]) == "wait"
    # The forms of the queue and job pages.
    _ok(client.post(PAGE + "actions/", {"action": "promote", "ids": ids["delayed"]}), "promote")
    assert queue.get_state(ids["delayed"]) == "wait"
    _ok(client.post(PAGE + "bulk/", {"action": "pause"}), "pause")
    assert queue.is_paused()
    _ok(client.post(PAGE + "bulk/", {"action": "resume"}), "resume")
    assert not queue.is_paused()
    post(API + "actions/", {"action": "fail", "ids": [ids["delayed"]], "reason": "on call"})
    assert queue.get_state(ids["delayed"]) == "failed"
    post(API + "bulk/", {"action": "retry_all", "state": "failed"})
    assert queue.get_counts("failed")["failed"] == 0
    post(API + "bulk/", {"action": "promote_all", "state": "delayed"})
    assert queue.get_counts("delayed")["delayed"] == 0
    post(API + "actions/", {"action": "remove", "ids": [ids["other_failed"]]})
    assert queue.get_state(ids["other_failed"]) is None
    post(API + "actions/", {"action": "retry", "ids": [ids["completed"]], "state": "completed"})
    post(API + "bulk/", {"action": "clean", "state": "completed", "grace_ms": 0})
    assert queue.get_counts("completed")["completed"] == 0
    post(API + "concurrency/", {"concurrency": 2})
    post(API + "concurrency/", {"concurrency": None})
    post(API + "schedulers/actions/", {"action": "remove", "id": "nightly-report"})
    added = post(API + "add/", {"name": "send-receipt", "data": {"n": 7}})["id"]
    post(API + "edit/", {"id": added, "data": {"n": 8}})
    assert queue.get_job(added).data == {"n": 8}  # type: ignore[union-attr]
    post(API + "duplicate/", {"id": added})
    # What became of the actions: their cohorts, as the panel and its pages show them.
    cohorts = _ok(client.get(API + "cohorts/"), "cohorts").json()["cohorts"]
    assert cohorts, "no action was recorded"
    _ok(client.get(PAGE + "cohorts/"), "cohorts panel")
    _ok(client.get(f"{PAGE}cohorts/{cohorts[0]['id']}/"), "cohort page")


def _json_poster(client: Client) -> Callable[[str, dict[str, Any]], Any]:
    def post(path: str, body: dict[str, Any]) -> Any:
        answer = client.post(path, json.dumps(body), content_type="application/json")
        return _ok(answer, path).json()

    return post


async def live_flow(redis: Redis) -> None:
    """A live page: subscribe to the queue and hear an event written after."""
    from django.contrib.auth.models import User

    user = await sync_to_async(User.objects.get)(username="acl-viewer")
    communicator = WebsocketCommunicator(LiveConsumer.as_asgi(), "/ws/live/")
    communicator.scope["user"] = user
    connected, _ = await communicator.connect()
    assert connected
    try:
        await communicator.send_json_to(
            {"type": "subscribe", "queues": [{"queue": f"bull:{QUEUE}", "last_id": None}]}
        )
        assert (await communicator.receive_json_from(timeout=5))["type"] == "subscribed"
        await communicator.send_json_to({"type": "discover"})
        assert (await communicator.receive_json_from(timeout=5))["type"] == "queues"
        # An event a worker would write (one XADD, by the test's own user).
        await asyncio.to_thread(redis.xadd, f"bull:{QUEUE}:events", {"event": "drained"})
        message = await communicator.receive_json_from(timeout=5)
        assert message["type"] == "events", message
    finally:
        await communicator.disconnect()
        await close_hubs()


def collect_history() -> None:
    """The history collector of a dashboard process, until it has read the queue."""
    collector = dashboard_collector("default")
    deadline = time.monotonic() + 15
    while collector.step() or not collector.holding or collector.read_last_pass:
        assert time.monotonic() < deadline, "the collector did not catch up"
        time.sleep(0.01)
    collector.stop()
    collector._hand_back()


def look_at_everything(ids: dict[str, str], redis: Redis) -> Client:
    """A person who may do everything opens every page and API read, a viewer
    follows the live socket, and the history collector of a dashboard process
    catches up (``redis``: the test's own client, for the event it writes).
    Answers the person's client, to act with."""
    from django.contrib.auth.models import Permission, User

    boss = Client()
    boss.force_login(User.objects.create_superuser("boss", password=None))
    read_everything(boss, ids)
    viewer = User.objects.create_user("acl-viewer", password=None, is_staff=True)
    viewer.user_permissions.add(Permission.objects.get(codename="view_queues"))
    asyncio.run(live_flow(redis))
    collect_history()
    return boss
