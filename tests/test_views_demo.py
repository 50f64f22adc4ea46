"""manage.py demo: the login it prints works and may act; traffic starts when
available; after its banner the terminal stays quiet."""

from __future__ import annotations

import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

import pytest
from django.contrib.auth import authenticate
from django.test import RequestFactory

from dashboard.core.permissions import can_act
from dashboard.management.commands import demo as demo_command
from dashboard.management.commands.demo import DEMO_USER, Command
from tests.e2e.server import ROOT, free_port, process_env, terminate, wait_until_serving


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


def test_after_its_banner_the_demo_prints_nothing_once_it_serves(
    redis_url: str, tmp_path: Path
) -> None:
    """The terminal shows the URL and the login, then stays quiet: the server's
    start-up lines are not repeated under the banner (the settings' LOGGING
    passes INFO from every logger)."""
    port = free_port()
    env = process_env(redis_url, tmp_path)
    log_path = tmp_path / "demo.log"
    with log_path.open("wb") as log:
        process = subprocess.Popen(
            [sys.executable, "manage.py", "demo", "--no-traffic", "--port", str(port)],
            cwd=ROOT,
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=subprocess.STDOUT,
        )
    try:
        wait_until_serving(
            "manage.py demo", process, f"http://127.0.0.1:{port}/login/", log_path, timeout=60
        )
        output = log_path.read_text()
        assert "stop with Ctrl+C" in output, output
        after_banner = output.split("stop with Ctrl+C\n", 1)[1]
        assert after_banner == "", after_banner
    finally:
        terminate(process)
