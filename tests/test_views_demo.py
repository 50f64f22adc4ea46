"""manage.py demo: the login it prints works and may act; traffic starts when available."""

from __future__ import annotations

import sys
import threading
import types
from typing import Any

import pytest
from django.contrib.auth import authenticate
from django.test import RequestFactory

from dashboard.management.commands.demo import DEMO_USER, Command
from dashboard.permissions import can_act


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

    def run_demo(url: str, *, prefix: str, stop: threading.Event) -> None:
        calls.append((url, prefix, stop))
        started.set()

    module = types.ModuleType("queues.demo")
    module.run_demo = run_demo  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "queues.demo", module)
    stop = threading.Event()
    label, thread = Command()._start_traffic("redis://x", "demo", stop)
    assert label == "running (prefix 'demo')"
    assert started.wait(5)
    assert calls == [("redis://x", "demo", stop)]
    # The command waits for this thread on the way out (the workers close first).
    assert thread is not None
    thread.join(5)
    assert not thread.is_alive()
