"""One dashboard scene with every page kind, for the tests that look at pages.

Four queues, as an on-call engineer would find them after an hour of demo-like
traffic: ``emails`` busy and healthy (rare failures), ``thumbnails`` healthy with
its usual 5% of corrupt images and one job running, ``payments`` truly failing
(a third of its charges failed over the last ten minutes) with an admin's
"retry all" on its chart, and ``reports`` with jobs waiting and no worker.

Jobs move through real processes (BullMQ 2.20.1 workers from ``peer.py``) and
the admin action goes through the dashboard's own form, so job pages, events
and the audit trail are what the runtime and the dashboard wrote. Nobody waits
an hour in a test: the hour before it is written twice, as the two writers of
per-minute figures would have left it. The workers' metrics (``seed_metrics``)
draw the overview's sparklines; the dashboard's own history (the keys of
queues.keys.HistoryKeys, written by the collector's script through
queues.collector.record, one batch a minute with its counts, wait and run
durations and backlog sample) fills the overview's "Last hour" table and the
queue page's history chart, with the same minutes' counts. The shipped
dashboard collects that history itself; the scene's server does not
(tests/conftest.py turns the collector off in every test process), because the
scene's hour is written again before each page with a new "now", which a
live collector's cursor would refuse: the scene says instead, through the
collector's own report (CollectorReport.caught_up), that a collector caught up
as the hour was written.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from playwright.sync_api import Browser, Page, expect
from redis import Redis

from queues.collector import (
    BACKLOG_TABS,
    MINUTE_MS,
    MinuteBatch,
    minute_of,
    record,
)
from queues.collector_report import CollectorReport
from queues.keys import HistoryKeys, QueueKeys
from queues.read.refs import QueueRef
from tests.dashboard_seed import now_ms, seed_metrics
from tests.e2e.conftest import Processes, wait_live

HOUR = 60


def _steady(per_minute: int, minutes: int = HOUR) -> list[int]:
    """A plausible busy minute-by-minute series around ``per_minute`` (oldest first)."""
    return [per_minute + (minute * 37 % 23) - 11 for minute in range(minutes)]


@dataclass(frozen=True)
class Scene:
    failed_job: str  # payments: failed for good
    active_job: str  # thumbnails: a worker holds it
    retried_job: str  # emails: failed once, completed on attempt 2
    missing_job: str = "no-such-job"


def build_scene(
    redis: Redis, processes: Processes, browser: Browser, base_url: str, auth_state: str
) -> Scene:
    emails_worker = processes.bullmq_worker("emails", "--fail-first")
    payments_worker = processes.bullmq_worker("payments", "--fail-first")
    # One slow job at a time: the first is active while the others wait.
    processes.bullmq_worker("thumbnails", "--sleep", "600")

    retried = processes.peer_add("emails", "welcome-email", "--attempts", "2", "--count", "6")
    lost = processes.peer_add("emails", "password-reset", "--count", "2")
    charges = processes.peer_add("payments", "charge-card", "--count", "8")
    emails_worker.wait_for(rf"completed {retried[-1]}\b")
    emails_worker.wait_for(rf"failed {lost[-1]} ")
    payments_worker.wait_for(rf"failed {charges[-1]} ")

    # The admin retries the failed charges from the page: the worker completes them.
    context = browser.new_context(base_url=base_url, storage_state=auth_state)
    page = context.new_page()
    page.on("dialog", lambda dialog: dialog.accept())
    page.goto("/queues/bull/payments/?state=failed")
    page.get_by_role("button", name=re.compile(r"^Retry all")).click()
    # Eight jobs are more than a handful: the page asks first, naming them.
    page.locator("dialog.confirm-dialog[open] [data-confirm-ok]").click()
    expect(page.locator(".message-success")).to_contain_text("8 failed jobs moved back to waiting")
    context.close()
    payments_worker.wait_for(rf"completed {charges[-1]}\b")
    # ... but the next charges fail again: the fix did not work.
    failed = processes.peer_add("payments", "charge-card", "--count", "5")
    payments_worker.wait_for(rf"failed {failed[-1]} ")

    (active, *_) = processes.peer_add("thumbnails", "resize", "--count", "12")
    processes.peer_add("emails", "newsletter", "--delay", "900000", "--count", "4")
    processes.peer_add("reports", "monthly-report", "--count", "3")
    processes.peer_add("reports", "weekly-churn", "--delay", "3600000", "--count", "2")

    seed_history(redis, now_ms())
    return Scene(failed_job=failed[-1], active_job=active, retried_job=retried[-1])


def _keys(name: str) -> QueueKeys:
    return QueueRef("bull", name).keys


# The hour before the scene, per queue: completed and failed per full minute,
# oldest first (reports has no worker: nothing finishes there), and how long
# its jobs waited and ran (ms). Payments' failed charges ran into the card
# gateway's 10 s timeout: its incident shows in the run p95 too.
INCIDENT = [0] * (HOUR - 12) + [14, 22, 30, 31, 36, 35, 38, 40, 37, 41, 39, 42]
RARE = [1 if minute % 17 == 8 else 0 for minute in range(HOUR)]  # one in the last 5 min
HOUR_BEFORE: dict[str, tuple[list[int], list[int]]] = {
    "emails": (_steady(360), RARE),
    "thumbnails": (_steady(118), [6] * HOUR),
    "payments": (_steady(90), INCIDENT),
}
WAIT_MS = {"emails": 35, "thumbnails": 1_800, "payments": 20}
RUN_MS = {"emails": 240, "thumbnails": 1_400, "payments": 650}
FAILED_RUN_MS = {"emails": 30_000, "thumbnails": 90, "payments": 10_000}
# How many minutes the dashboard's history holds, the current one included:
# one less than the hour a page reads, so that it still fits in the hour when
# a minute begins between the seeding and the page's read (a history spanning
# more than an hour is drawn over 24 hours, the hour a sliver at its end).
HISTORY_MINUTES = HOUR  # the 1h range reads 61 (queues.read.history.RANGES)
# The scene's collector, as the status hash names it ("<host>:<pid>:<token>").
COLLECTOR = "dash-1:4127:9f3c2a"


def seed_history(redis: Redis, now: int) -> None:
    """The hour before ``now`` as workers with metrics would have recorded it,
    and as the dashboard's history collector would have (see the module's
    notes); written again before each page is looked at, so its newest minute
    is the one before the page's (the scene's workers keep no metrics themselves)."""
    so_far = (now % MINUTE_MS) / MINUTE_MS
    for name, (completed, failed) in HOUR_BEFORE.items():
        this_minute = (int(completed[-1] * so_far), int(failed[-1] * so_far))
        seed_metrics(redis, _keys(name), completed, failed, now, this_minute=this_minute)
    for name in (*HOUR_BEFORE, "reports"):
        _record_hour(redis, QueueRef("bull", name), now)
    CollectorReport(redis).caught_up(COLLECTOR)


def history_minutes(name: str, now: int) -> dict[int, tuple[int, int]]:
    """minute -> (completed, failed) of ``name``'s history as ``seed_history``
    writes it at ``now``: the last HISTORY_MINUTES - 1 full minutes (the
    newest of the workers' metrics) and the current one so far."""
    completed, failed = HOUR_BEFORE.get(name, ([0] * HOUR, [0] * HOUR))
    full = HISTORY_MINUTES - 1
    so_far = (now % MINUTE_MS) / MINUTE_MS
    current = minute_of(now)
    minutes = {
        current - full + n: (done, lost)
        for n, (done, lost) in enumerate(zip(completed[-full:], failed[-full:], strict=True))
    }
    minutes[current] = (int(completed[-1] * so_far), int(failed[-1] * so_far))
    return minutes


def _record_hour(redis: Redis, ref: QueueRef, now: int) -> None:
    """``ref``'s history (any earlier seeding's gone) as the collector records
    it: one batch a minute through its script, each going on from the last."""
    keys = HistoryKeys(ref.name, ref.prefix)
    # All of it: an earlier seeding's oldest minutes lie before this hour, and
    # a history spanning more than an hour is drawn over 24 hours.
    earlier = list(redis.scan_iter(match=keys.base + "*"))
    if earlier:
        redis.delete(*earlier)
    minutes = history_minutes(ref.name, now)
    backlog = _backlog(redis, ref.keys)
    cursor = ""
    for minute, (completed, failed) in sorted(minutes.items()):
        # The cursor a collector would have recorded: the minute's last event
        # (the current minute's: now).
        batch = MinuteBatch(minute, f"{min(now, minute * MINUTE_MS + MINUTE_MS - 1)}-0")
        batch.add.update({"c": completed, "f": failed})
        for n in range(completed + failed):
            # Spread evenly from half to twice the queue's usual times.
            spread = 0.5 + (n * 37 % 100) / 66
            batch.duration("w", int(WAIT_MS.get(ref.name, 0) * spread))
            run = RUN_MS if n < completed else FAILED_RUN_MS
            batch.duration("r", int(run.get(ref.name, 0) * spread))
        batch.set["b"] = backlog
        batch.max["bx"] = backlog
        record(redis, ref, cursor, batch)
        cursor = batch.last_id


def _backlog(redis: Redis, keys: QueueKeys) -> int:
    """The jobs ready to run now, counted as the collector samples its backlog."""
    pipe = redis.pipeline(transaction=False)
    for tab in BACKLOG_TABS:
        for state in tab.keys:
            key = keys.state(state.name)
            if state.is_list:
                pipe.llen(key)
            else:
                pipe.zcard(key)
    return sum(pipe.execute())


# Every page kind the looking tests visit, by a name that reads in a test id.
PAGE_KINDS = (
    "overview",
    "queue-failed",
    "queue-waiting",
    "queue-delayed",
    "queue-completed",
    "queue-active",
    "job-failed",
    "job-active",
    "job-retried",
    "job-missing",
    "events",
    "login",
    "not-found",
)
# Pages without the live socket (nothing to wait for).
STILL_PAGES = ("login", "not-found", "job-missing")
MISSING_PAGES = ("not-found", "job-missing")  # answered with 404


def page_path(kind: str, scene: Scene) -> str:
    paths = {
        "overview": "/",
        "queue-failed": "/queues/bull/payments/?state=failed",
        "queue-waiting": "/queues/bull/thumbnails/?state=wait",
        "queue-delayed": "/queues/bull/emails/?state=delayed",
        "queue-completed": "/queues/bull/emails/?state=completed",
        "queue-active": "/queues/bull/thumbnails/?state=active",
        "job-failed": f"/queues/bull/payments/job/{scene.failed_job}",
        "job-active": f"/queues/bull/thumbnails/job/{scene.active_job}",
        "job-retried": f"/queues/bull/emails/job/{scene.retried_job}",
        "job-missing": f"/queues/bull/emails/job/{scene.missing_job}",
        "events": "/queues/bull/payments/events/",
        "login": "/login/",
        "not-found": "/queues/bull/no-such-queue/",
    }
    return paths[kind]


@contextmanager
def visit(
    browser: Browser, base_url: str, auth_state: str, scene: Scene, kind: str, **look: Any
) -> Iterator[Page]:
    """A page of ``kind`` in a fresh context with ``look`` (colour scheme, viewport...),
    logged in except for the login page, its live socket open; closed afterwards."""
    context = browser.new_context(
        base_url=base_url, storage_state=None if kind == "login" else auth_state, **look
    )
    try:
        page = context.new_page()
        response = page.goto(page_path(kind, scene))
        assert response is not None
        assert response.status == (404 if kind in MISSING_PAGES else 200), kind
        if kind not in STILL_PAGES:
            wait_live(page)
            # The socket's first answer makes the page refetch what it shows (at
            # most once a second, live.js): look at the page after that, as a
            # person would a moment after it loads.
            page.wait_for_timeout(1200)
        yield page
    finally:
        context.close()
