"""Every page kind stays whole under live traffic: tests that look at the screen.

Each page is rendered, then about five seconds of events from another process
(tests/e2e/traffic.py) run, including events for the very job a job page shows
(progress, log lines) and a job that keeps changing state. Then, per page:

- every block the server rendered at load is still on the screen, unless the
  server no longer renders it either (a job that moved on), and every block
  the server renders now is on the screen;
- no visible text reads "undefined", "null", "NaN" or "[object Object]";
- the console logged no error and no script threw.

Blocks are what a reader would miss: the children of <main>, every
[data-block] part, headings outside those, counts by queue and state, queue
rows, tables, navigation and forms (job and event rows come and go with
traffic and are not blocks). One traffic process serves every page kind, and
the pages of a batch share the same five seconds.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from playwright.sync_api import Browser, BrowserContext, ConsoleMessage, Page, expect
from redis import Redis

from queues.connection import connect
from queues.keys import QueueKeys
from tests.dashboard_seed import now_ms, seed_job
from tests.e2e.conftest import Process
from tests.e2e.server import ROOT, DashboardServer, terminate

LOOK = "e2e-look"
TRAFFIC = Path(__file__).with_name("traffic.py")
LIVE_SECONDS = 5.0
# Pages held open together; every one of them is live (a socket, refreshes).
BATCH = 8

JOBS = {
    "waiting": "look-wait",
    "prioritized": "look-prioritized",
    "delayed": "look-delayed",
    "active": "look-active",
    "waiting-children": "look-parent",
    "completed": "look-completed",
    "failed": "look-failed",
    "retried": "look-retried",  # failed once, retried, then completed
    "moving": "look-mover",  # failed and retried over and over while shown
}
QUEUE_URL = f"/queues/bull/{LOOK}/"
TABS = ("wait", "prioritized", "delayed", "active", "waiting-children", "completed", "failed")
PAGES: dict[str, str] = {
    "overview": "/",
    **{f"tab {tab}": f"{QUEUE_URL}?state={tab}" for tab in TABS},
    "events": f"{QUEUE_URL}events/",
    "workers": f"{QUEUE_URL}workers/",
    **{f"job {kind}": f"{QUEUE_URL}job/{job_id}" for kind, job_id in JOBS.items()},
    "login": "/login/",
    "unknown job": f"{QUEUE_URL}job/no-such-job",
    "unknown queue": "/queues/bull/no-such-queue/",
}
LOGGED_OUT = {"login"}
NOT_FOUND = {"unknown job", "unknown queue"}

LOOK_JS = Path(__file__).with_name("look.js").read_text()
BLOCKS_OF_HTML = f"html => ({LOOK_JS}).blocks(new DOMParser().parseFromString(html, 'text/html'))"
BLOCKS_NOW = f"() => ({LOOK_JS}).blocks(document)"
BLOCKS_ON_SERVER = f"url => ({LOOK_JS}).blocksOnServer(url)"
FIND_BAD_TEXT = f"() => ({LOOK_JS}).badText()"


def seed_look_queue(redis: Redis) -> None:
    """A job in every state, each as a real queue would hold it."""
    keys = QueueKeys(LOOK)
    now = now_ms()
    seed_job(redis, keys, JOBS["waiting"], state="wait", name="send-receipt", data={"to": "a@b.c"})
    seed_job(
        redis, keys, JOBS["prioritized"], state="prioritized", name="vip-email",
        fields={"priority": 5}, score=5 * 2**32,
    )  # fmt: skip
    seed_job(
        redis, keys, JOBS["delayed"], state="delayed", name="digest", fields={"delay": 3_600_000}
    )
    seed_job(
        redis, keys, JOBS["active"], state="active", name="resize-image",
        opts={"attempts": 3}, fields={"pb": "worker-1", "processedOn": now - 42_000, "ats": 1},
    )  # fmt: skip
    redis.set(keys.lock(JOBS["active"]), "token-of-worker-1", px=600_000)
    child = seed_job(redis, keys, "look-child", state="wait", name="part")
    seed_job(redis, keys, JOBS["waiting-children"], state="waiting-children", name="assemble")
    redis.sadd(keys.dependencies(JOBS["waiting-children"]), keys.job(child))
    seed_job(redis, keys, JOBS["completed"], state="completed", name="charge-card")
    seed_job(
        redis, keys, JOBS["failed"], state="failed", name="charge-card", opts={"attempts": 2},
        fields={
            "atm": 2, "ats": 2, "failedReason": "card declined",
            "stacktrace": json.dumps(["Error: card declined\n    at charge (billing.js:12:5)"] * 2),
        },
    )  # fmt: skip
    seed_job(
        redis, keys, JOBS["retried"], state="completed", name="charge-card", opts={"attempts": 3},
        fields={
            "atm": 2, "ats": 2,
            "stacktrace": json.dumps(["Error: card declined\n    at charge (billing.js:12:5)"]),
        },
    )  # fmt: skip
    seed_job(
        redis, keys, JOBS["moving"], state="wait", name="flaky",
        opts={"attempts": 5, "stackTraceLimit": 3},
    )  # fmt: skip


@dataclass
class Look:
    """What one page showed: its blocks at load, after the traffic, and now on the server."""

    kind: str
    page: Page
    rendered: list[str] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)


def watch_errors(look: Look) -> None:
    def on_console(message: ConsoleMessage) -> None:
        if message.type != "error":
            return
        # A not-found page answers 404 on purpose; Chromium logs that as a failed load.
        if look.kind in NOT_FOUND and "status of 404" in message.text:
            return
        look.errors.append(f"console: {message.text}")

    look.page.on("console", on_console)
    look.page.on("pageerror", lambda error: look.errors.append(f"page error: {error}"))


def open_look(context: BrowserContext, kind: str) -> Look:
    look = Look(kind, context.new_page())
    watch_errors(look)
    response = look.page.goto(PAGES[kind])
    assert response is not None
    # What the server rendered, read from the response before any script ran.
    look.rendered = look.page.evaluate(BLOCKS_OF_HTML, response.text())
    if look.page.locator("main[data-page]").count():
        expect(look.page.locator("html")).to_have_attribute("data-live", "open", timeout=10_000)
    return look


def check(look: Look) -> None:
    """Waits (a few seconds at most) for the page to show every block the
    server renders now and every block it rendered at load that it still
    renders; then records what is missing, bad text and errors."""
    page, missing = look.page, []
    deadline = time.monotonic() + 4.0
    while True:
        shown = set(page.evaluate(BLOCKS_NOW))
        on_server = set(page.evaluate(BLOCKS_ON_SERVER, page.url))
        kept_by_server = set(look.rendered) & on_server
        missing = sorted((kept_by_server | on_server) - shown)
        if not missing or time.monotonic() > deadline:
            break
        time.sleep(0.3)
    if missing:
        look.problems.append(f"blocks gone from the screen: {missing}")
    bad = page.evaluate(FIND_BAD_TEXT)
    if bad:
        look.problems.append(f"text from missing values: {bad}")
    if page.locator("main[data-page]").count() and not page.evaluate("window.echomqLive.flushes"):
        look.problems.append("no live event reached the page: the check saw no traffic")
    look.problems.extend(look.errors)


def batches(kinds: list[str]) -> Iterator[list[str]]:
    for start in range(0, len(kinds), BATCH):
        yield kinds[start : start + BATCH]


@pytest.fixture(scope="module")
def looked(
    browser: Browser,
    dashboard_server: DashboardServer,
    server_env: dict[str, str],
    redis_url: str,
    auth_state: str,
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[dict[str, list[str]]]:
    """Every page kind, looked at before and after five seconds of live traffic:
    the problems found on each."""
    redis = connect(redis_url)
    redis.flushall()
    seed_look_queue(redis)
    log_path = tmp_path_factory.mktemp("traffic") / "traffic.log"
    touched = [job_id for kind, job_id in JOBS.items() if kind != "moving"]
    with log_path.open("wb") as log:
        process = subprocess.Popen(
            [sys.executable, str(TRAFFIC), LOOK, "--touch", *touched, "--mover", JOBS["moving"]],
            cwd=ROOT, env=server_env, stdout=log, stderr=subprocess.STDOUT,
        )  # fmt: skip
    traffic = Process(process, log_path)
    found: dict[str, list[str]] = {}
    try:
        traffic.wait_for("tick 1")
        for logged_out in (False, True):
            kinds = [kind for kind in PAGES if (kind in LOGGED_OUT) == logged_out]
            for batch in batches(kinds):
                context = browser.new_context(
                    base_url=dashboard_server.url,
                    storage_state=None if logged_out else auth_state,
                    viewport={"width": 1280, "height": 860},
                )
                try:
                    looks = [open_look(context, kind) for kind in batch]
                    time.sleep(LIVE_SECONDS)
                    for look in looks:
                        check(look)
                        found[look.kind] = look.problems
                finally:
                    context.close()
        assert process.poll() is None, f"the traffic stopped:\n{traffic.output()[-2000:]}"
        yield found
    finally:
        terminate(process)
        redis.flushall()
        redis.close()


@pytest.mark.parametrize("kind", list(PAGES))
def test_every_page_kind_stays_whole_under_live_traffic(
    looked: dict[str, list[str]], kind: str
) -> None:
    assert kind in looked, f"{kind} was not looked at"
    assert looked[kind] == [], f"{kind} ({PAGES[kind]}):\n" + "\n".join(looked[kind])


def test_the_look_checks_find_a_dropped_block_and_undefined_text(page: Page) -> None:
    """The checks above can fail: a page with a block missing and a text node
    reading "undefinedundefined" is caught by both."""
    html = "<main><div id='messages'></div><section data-block='facts'>Facts</section></main>"
    page.set_content(html)
    rendered = page.evaluate(BLOCKS_OF_HTML, html)
    page.evaluate(
        "() => { const main = document.querySelector('main');"
        " main.replaceChildren(main.firstElementChild, 'undefined', 'undefined'); }"
    )
    assert "main > facts" in rendered
    assert "main > facts" not in page.evaluate(BLOCKS_NOW)
    assert page.evaluate(FIND_BAD_TEXT) == ["undefined", "undefined"]
