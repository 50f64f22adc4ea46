"""End-to-end fixtures: the real ASGI app under daphne, a real Redis, a real Chromium.

The dashboard runs in its own process (``daphne dashboard.asgi:application``)
on a free port, with a fresh SQLite database holding one staff user, on the
test Redis. Jobs are added and processed by other
processes too (``peer.py`` for BullMQ 2.20.1, ``python -m queues worker`` for
ours), so every update the browser shows crossed a process boundary.

The browser is the system Chromium: a missing /usr/bin/chromium fails the
tests with the command that installs it, it never skips them.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest
from playwright.sync_api import Browser, Dialog, Page, expect

from tests.e2e.server import (
    CHROMIUM,
    CHROMIUM_ARGS,
    PASSWORD,
    ROOT,
    USERNAME,
    DashboardServer,
    ServerFailed,
    free_port,
    manage,
    prepare,
    terminate_all,
)

if TYPE_CHECKING:
    from tests.e2e.scene import Scene

PEER = Path(__file__).with_name("peer.py")
# Screenshots a person reads after changing a page (docs/ holds only the
# README's): under the checkout's build/ (ignored by git), one folder per topic,
# so clones tested at once never write over each other's. ECHOMQ_SHOTS_DIR moves them.
SHOTS_ROOT = Path(
    os.environ.get("ECHOMQ_SHOTS_DIR")
    or Path(__file__).resolve().parents[2] / "build" / "screenshots"
)
# Configured, so pages and the overview show them before they hold any key.
E2E_QUEUES = (
    "e2e-added",
    "e2e-retry",
    "e2e-promote",
    "e2e-fail",
    "e2e-life",
    "e2e-restart",
    "e2e-feed",
    "e2e-tabs",
    "e2e-look",
    "e2e-workers",
)

pytestmark = pytest.mark.browser
# After a test, its helper processes get this long to stop on SIGTERM before
# SIGKILL: the test is decided and its Redis is flushed next, so nothing waits
# on a BullMQ worker's drain delay (up to 5 s) or on a job it holds (the
# scene's thumbnails worker sleeps 600 s in one).
TEARDOWN_GRACE_S = 1.0


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if "e2e" in item.nodeid.split("/"):
            item.add_marker(pytest.mark.browser)


@pytest.fixture(scope="session")
def browser_type_launch_args(browser_type_launch_args: dict[str, Any]) -> dict[str, Any]:
    if not os.access(CHROMIUM, os.X_OK):
        pytest.fail(
            f"{CHROMIUM} is missing: the browser tests need the system Chromium. "
            "Install it with: apt-get install -y chromium",
            pytrace=False,
        )
    return {
        **browser_type_launch_args,
        "executable_path": CHROMIUM,
        "headless": True,
        "args": CHROMIUM_ARGS,
    }


@pytest.fixture(scope="session")
def server_env(redis_url: str, tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    workdir = tmp_path_factory.mktemp("e2e")
    return prepare(redis_url, workdir, ECHOMQ_QUEUES=",".join(E2E_QUEUES))


@pytest.fixture(scope="session")
def dashboard_server(
    server_env: dict[str, str], tmp_path_factory: pytest.TempPathFactory
) -> Iterator[DashboardServer]:
    server = DashboardServer(
        server_env, free_port(), tmp_path_factory.mktemp("daphne") / "daphne.log"
    )
    start(server)
    yield server
    server.stop()


def log_in(page: Page, base_url: str) -> None:
    """Through the login form, as the test user."""
    page.goto(base_url + "/login/")
    page.fill("#id_username", USERNAME)
    page.fill("#id_password", PASSWORD)
    page.click("button[type=submit]")
    page.wait_for_url(base_url + "/")


@pytest.fixture(scope="session")
def auth_state(
    browser: Browser, dashboard_server: DashboardServer, tmp_path_factory: pytest.TempPathFactory
) -> str:
    """Log in once through the login form; every test's context reuses the cookies."""
    context = browser.new_context(base_url=dashboard_server.url)
    log_in(context.new_page(), dashboard_server.url)
    path = str(tmp_path_factory.mktemp("auth") / "state.json")
    context.storage_state(path=path)
    context.close()
    return path


@pytest.fixture(scope="session")
def browser_context_args(
    browser_context_args: dict[str, Any], dashboard_server: DashboardServer, auth_state: str
) -> dict[str, Any]:
    return {
        **browser_context_args,
        "base_url": dashboard_server.url,
        "storage_state": auth_state,
        "viewport": {"width": 1280, "height": 860},
    }


# The page's own confirmation dialog (static/dashboard/dashboard.js), open.
CONFIRM_DIALOG = "dialog.confirm-dialog[open]"


@dataclass
class Confirms:
    """How the tests answer the page's confirmation dialogs."""

    page: Page
    native: list[str] = field(default_factory=list)

    def manual(self) -> None:
        """Stop saying yes by itself: this test answers the dialog (or cancels)."""
        self.page.remove_locator_handler(self.page.locator(CONFIRM_DIALOG))


@pytest.fixture(autouse=True)
def confirms(page: Page) -> Iterator[Confirms]:
    """Destructive buttons ask first, in a dialog of the page; the engineer in
    these tests says yes there, by clicking its confirm button (Playwright
    answers it whenever it shows before the test's next step). A native
    ``window.confirm`` would be a defect: it is dismissed, so the action does
    not happen, and the test fails naming it."""
    answers = Confirms(page)

    def refuse(dialog: Dialog) -> None:
        answers.native.append(dialog.message)
        dialog.dismiss()

    page.on("dialog", refuse)
    page.add_locator_handler(
        page.locator(CONFIRM_DIALOG), lambda box: box.locator("[data-confirm-ok]").click()
    )
    yield answers
    assert not answers.native, f"native dialogs were shown: {answers.native}"


@dataclass
class Process:
    """A child process whose output lands in a file the test can wait on."""

    process: subprocess.Popen[bytes]
    log_path: Path

    def output(self) -> str:
        return self.log_path.read_text(errors="replace")

    def wait_for(self, pattern: str, timeout: float = 20.0) -> re.Match[str]:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            found = re.search(pattern, self.output())
            if found:
                return found
            if self.process.poll() is not None:
                break
            time.sleep(0.05)
        raise AssertionError(
            f"no {pattern!r} in the output of {self.process.args}:\n{self.output()[-3000:]}"
        )


@dataclass
class Processes:
    env: dict[str, str]
    workdir: Path
    started: list[Process] = field(default_factory=list)

    def spawn(self, *args: str) -> Process:
        log_path = self.workdir / f"proc-{len(self.started)}.log"
        with log_path.open("wb") as log:
            process = subprocess.Popen(
                args, cwd=ROOT, env=self.env, stdout=log, stderr=subprocess.STDOUT
            )
        started = Process(process, log_path)
        self.started.append(started)
        return started

    def peer(self, *args: str) -> Process:
        return self.spawn(sys.executable, str(PEER), *args)

    def our_worker(self, queue: str) -> Process:
        """``python -m queues worker``: our runtime's worker, completing every job."""
        worker = self.spawn(sys.executable, "-m", "queues", "worker", queue)
        worker.wait_for(r"worker \S+ on ")
        return worker

    def bullmq_worker(self, queue: str, *options: str) -> Process:
        worker = self.peer("worker", queue, *options)
        worker.wait_for("ready")
        return worker

    def our_queue(self, queue: str, call: str) -> None:
        """Run ``Queue(queue).<call>`` of our runtime in another process."""
        code = (
            "import os\n"
            "from queues.connection import connect\n"
            "from queues.queue import Queue\n"
            f"Queue({queue!r}, connect(os.environ['REDIS_URL'])).{call}\n"
        )
        subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=self.env, check=True, timeout=30)

    def peer_add(self, queue: str, name: str, *options: str) -> list[str]:
        """Add jobs with BullMQ 2.20.1 in another process; their ids."""
        done = subprocess.run(
            [sys.executable, str(PEER), "add", queue, name, *options],
            cwd=ROOT, env=self.env, check=True, capture_output=True, text=True, timeout=30,
        )  # fmt: skip
        return done.stdout.split()

    def stop_all(self, grace: float = 10.0) -> None:
        """SIGTERM to all at once; SIGKILL to those still running ``grace`` s later."""
        terminate_all((started.process for started in self.started), grace)


@pytest.fixture
def processes(server_env: dict[str, str], redis_client: Any, tmp_path: Path) -> Iterator[Processes]:
    """Other processes acting on the queues; a flushed Redis; all stopped at the end."""
    running = Processes(server_env, tmp_path)
    yield running
    running.stop_all(TEARDOWN_GRACE_S)


def start(server: DashboardServer) -> None:
    try:
        server.start()
    except ServerFailed as error:
        pytest.fail(str(error), pytrace=False)


def wait_live(page: Page) -> None:
    """The page's WebSocket is open and the server confirmed where each queue resumes."""
    expect(page.locator("html")).to_have_attribute("data-live", "open", timeout=10_000)


# --- the scene the looking tests share (tests/e2e/scene.py) -------------------------


@pytest.fixture(scope="module")
def scene_server(
    server_env: dict[str, str], tmp_path_factory: pytest.TempPathFactory
) -> Iterator[DashboardServer]:
    """A server that discovers the scene's queues instead of listing the test ones."""
    env = {key: value for key, value in server_env.items() if key != "ECHOMQ_QUEUES"}
    server = DashboardServer(env, free_port(), tmp_path_factory.mktemp("scene") / "daphne.log")
    start(server)
    yield server
    server.stop()


@pytest.fixture(scope="module")
def scene(
    redis_url: str,
    server_env: dict[str, str],
    scene_server: DashboardServer,
    browser: Browser,
    auth_state: str,
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[Scene]:
    """Every page kind with something on it, built once per module (about 15 s)."""
    from queues.connection import connect
    from tests.e2e.scene import build_scene

    client = connect(redis_url)
    client.flushall()
    # A fresh scene: no admin action of an earlier one on its charts either.
    manage(
        server_env,
        "shell",
        "-c",
        "from dashboard.models import AuditEntry as A; A.objects.all().delete()",
    )
    running = Processes(server_env, tmp_path_factory.mktemp("scene-processes"))
    try:
        yield build_scene(client, running, browser, scene_server.url, auth_state)
    finally:
        running.stop_all(TEARDOWN_GRACE_S)
        client.flushall()
        client.close()


@pytest.fixture
def fresh_scene(scene: Scene, redis_url: str) -> Scene:
    """The scene with its hour of history ending now (see scene.seed_history)."""
    from queues.connection import connect
    from tests.dashboard_seed import now_ms
    from tests.e2e.scene import seed_history

    client = connect(redis_url)
    seed_history(client, now_ms())
    client.close()
    return scene
