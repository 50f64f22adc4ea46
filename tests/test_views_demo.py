"""manage.py demo: the login it prints works and may act; traffic starts when
available; after its banner the terminal stays quiet."""

from __future__ import annotations

import re
import subprocess
import sys
import threading
import time
import urllib.request
from pathlib import Path
from typing import Any

import pytest
from django.contrib.auth import authenticate
from django.test import RequestFactory

from dashboard.core.permissions import can_act
from dashboard.management.commands import demo as demo_command
from dashboard.management.commands.demo import DEMO_USER, Command
from tests.e2e.server import ROOT, process_env, terminate


def test_demo_user_gets_a_fresh_password_and_may_act(db: None) -> None:
    command = Command()
    first = command._demo_user()
    second = command._demo_user()
    assert first != second
    # A login as the login page makes it (django-axes checks every one against its request).
    login = RequestFactory().post("/login/")
    assert authenticate(login, username=DEMO_USER, password=first) is None
    user = authenticate(login, username=DEMO_USER, password=second)
    assert user is not None
    assert user.is_staff
    assert can_act(user)


def test_demo_traffic_runs_in_the_background(monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[tuple[str, str, Any]] = []
    started = threading.Event()

    async def run_demo(url: str, *, prefix: str, stop: threading.Event) -> None:
        calls.append((url, prefix, stop))
        started.set()

    monkeypatch.setattr(demo_command, "run_demo", run_demo)
    stop = threading.Event()
    label, thread = Command()._start_traffic("redis://x", "demo", stop)
    assert label == "running (prefix 'demo')"
    assert started.wait(5)
    assert calls == [("redis://x", "demo", stop)]
    # The command waits for this thread on the way out (the workers close first).
    assert thread is not None
    thread.join(5)
    assert not thread.is_alive()


def test_the_banner_comes_once_the_server_listens_and_nothing_after_it(
    redis_url: str, tmp_path: Path
) -> None:
    """The terminal shows the URL and the login, then stays quiet: the server's
    start-up lines are not repeated under the banner (the settings' LOGGING
    passes INFO from every logger). The banner waits for the server, so its
    URL answers at once and names the port taken: with ``--port 0`` the one
    the system chose (before, ``http://127.0.0.1:0/``)."""
    env = process_env(redis_url, tmp_path)
    log_path = tmp_path / "demo.log"
    with log_path.open("wb") as log:
        process = subprocess.Popen(
            [sys.executable, "manage.py", "demo", "--no-traffic", "--port", "0"],
            cwd=ROOT,
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=subprocess.STDOUT,
        )
    try:
        deadline = time.monotonic() + 60
        while "stop with Ctrl+C" not in log_path.read_text() and time.monotonic() < deadline:
            assert process.poll() is None, log_path.read_text()
            time.sleep(0.1)
        output = log_path.read_text()
        found = re.search(r"EchoMQ dashboard\s+http://127\.0\.0\.1:(\d+)/", output)
        assert found, output
        assert int(found.group(1)) > 0
        # Our own loopback URL, taken from the banner: answered without a retry.
        with urllib.request.urlopen(found.group(0).split()[-1] + "login/", timeout=10) as page:  # noqa: S310
            assert page.status == 200
        after_banner = output.split("stop with Ctrl+C\n", 1)[1]
        assert after_banner == "", after_banner
    finally:
        terminate(process)
