"""Logging out, and login throttling (django-axes): five wrong passwords for a
username from one address lock that pair out for the cool-off, say until
when, refuse even the right password meanwhile, and do not tell which
usernames exist."""

from __future__ import annotations

import re
import time
from datetime import timedelta
from typing import Any

import pytest
from django.test import Client

PASSWORD = "the-right-pass-1"


@pytest.fixture
def ann(make_user: Any, settings: Any) -> Any:
    # A fast hasher: these tests make dozens of logins; what they test is the counting.
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]
    user = make_user("viewer", username="ann")
    user.set_password(PASSWORD)
    user.save()
    return user


def _login(client: Client, username: str, password: str, **extra: Any) -> Any:
    return client.post("/login/", {"username": username, "password": password}, **extra)


def test_logging_out_lands_on_the_login_page_saying_so(ann: Any) -> None:
    client = Client()
    assert _login(client, "ann", PASSWORD).status_code == 302
    assert client.get("/api/queues/").status_code != 401
    response = client.post("/logout/", follow=True)
    assert response.redirect_chain == [("/login/", 302)]
    assert response.status_code == 200
    assert "You are logged out." in response.content.decode()
    assert client.get("/api/queues/").status_code == 401


def test_a_copied_session_cookie_stops_working_when_its_session_logs_out(ann: Any) -> None:
    """Another tab, another machine or a thief holding the same cookie: the
    logout ends the session itself, not only the cookie of the browser that
    asked (signed-cookie sessions could not do this)."""
    from django.conf import settings

    client = Client()
    assert _login(client, "ann", PASSWORD).status_code == 302
    copy = Client()
    copy.cookies[settings.SESSION_COOKIE_NAME] = client.cookies[settings.SESSION_COOKIE_NAME].value
    assert copy.get("/api/queues/").status_code != 401
    assert copy.get("/").status_code == 200
    assert client.post("/logout/").status_code == 302
    assert copy.get("/api/queues/").status_code == 401
    page = copy.get("/")
    assert page.status_code == 302
    assert page["Location"].startswith("/login/")


def test_a_logout_through_another_process_applies_within_the_session_cache_ttl(
    ann: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Each process keeps the sessions it read for a few seconds
    (dashboard.core.short_cache). Another process's logout deletes the row, not
    this process's copy: the copy goes when its time is up."""
    from django.conf import settings
    from django.contrib.sessions.models import Session

    from dashboard.core import short_cache

    monkeypatch.setattr(short_cache, "TTL_S", 0.5)
    client = Client()
    assert _login(client, "ann", PASSWORD).status_code == 302
    key = client.cookies[settings.SESSION_COOKIE_NAME].value
    assert client.get("/api/queues/").status_code == 200  # this process has it now
    Session.objects.filter(session_key=key).delete()  # what another process's logout does here
    time.sleep(0.6)
    assert client.get("/api/queues/").status_code == 401


def test_five_wrong_passwords_lock_the_username_until_a_stated_time(
    ann: Any, settings: Any
) -> None:
    client = Client()
    for _ in range(4):
        wrong = _login(client, "ann", "nope")
        assert wrong.status_code == 200
        assert "Wrong username or password." in wrong.content.decode()
    locked = _login(client, "ann", "nope")
    assert locked.status_code == 429
    page = locked.content.decode()
    assert "Too many failed logins" in page
    assert "Wrong username or password." not in page
    # Says when: a UTC time and how long from now (the 15-minute cool-off).
    assert re.search(r"Try again after \d\d:\d\d:\d\d UTC \(in 15 minutes\)", page), page
    assert 890 <= int(locked["Retry-After"]) <= 900

    right = _login(client, "ann", PASSWORD)
    assert right.status_code == 429
    assert "Too many failed logins" in right.content.decode()
    assert "_auth_user_id" not in client.session
    # Another address may still log in as ann: the lockout is per username and address.
    other = Client(REMOTE_ADDR="10.9.8.7")
    assert _login(other, "ann", PASSWORD).status_code == 302


def test_an_unknown_username_is_locked_exactly_like_a_real_one(ann: Any) -> None:
    answers = {}
    for username in ("ann", "nobody-by-this-name"):
        client = Client()
        statuses = [_login(client, username, "nope").status_code for _ in range(6)]
        page = _login(client, username, "nope").content.decode()
        page = re.sub(r'name="csrfmiddlewaretoken" value="[^"]+"', "", page)
        answers[username] = (statuses, re.sub(r"\d\d:\d\d:\d\d|nobody-by-this-name|ann", "", page))
    assert answers["ann"] == answers["nobody-by-this-name"]
    assert answers["ann"][0] == [200, 200, 200, 200, 429, 429]


def test_the_lock_opens_after_the_cool_off(ann: Any, settings: Any) -> None:
    settings.AXES_COOLOFF_TIME = timedelta(seconds=1)
    client = Client()
    for _ in range(5):
        _login(client, "ann", "nope")
    locked = _login(client, "ann", PASSWORD)
    assert locked.status_code == 429
    assert "(in 1 second)" in locked.content.decode()
    time.sleep(1.1)
    assert _login(client, "ann", PASSWORD).status_code == 302


def test_a_successful_login_forgets_earlier_failures(ann: Any) -> None:
    client = Client()
    for _ in range(4):
        _login(client, "ann", "nope")
    assert _login(client, "ann", PASSWORD).status_code == 302
    client.logout()
    for _ in range(4):
        assert _login(client, "ann", "nope").status_code == 200
