"""The few seconds each process keeps the session, the user and the permission
answers (dashboard.core.short_cache): a change made here applies at once, one made
elsewhere within the one TTL, and the cache stays bounded."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from django.contrib.auth.models import Permission, User
from django.test import Client
from redis import Redis

from dashboard.core import short_cache
from dashboard.core.short_cache import ShortCache

API_QUEUES = "/api/queues/"


@pytest.fixture
def viewer(dashboard_redis: Redis, make_user: Callable[..., Any]) -> Client:
    client = Client()
    client.force_login(make_user("viewer", "on-call"))
    assert client.get(API_QUEUES).status_code == 200  # session, user and answers kept now
    return client


def test_a_permission_taken_away_in_this_process_applies_at_once(viewer: Client) -> None:
    user = User.objects.get(username="on-call")
    user.user_permissions.remove(Permission.objects.get(codename="view_queues"))
    assert viewer.get(API_QUEUES).status_code == 403


def test_a_permission_taken_away_elsewhere_applies_within_the_ttl(
    viewer: Client, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Another process's change: a row deleted, no signal reaches this process.
    User.user_permissions.through.objects.filter(user__username="on-call").delete()
    assert viewer.get(API_QUEUES).status_code == 200  # kept, for the TTL at most
    later = short_cache.time.monotonic() + short_cache.TTL_S + 0.1
    monkeypatch.setattr(short_cache.time, "monotonic", lambda: later)
    assert viewer.get(API_QUEUES).status_code == 403


def test_past_its_bound_the_expired_answers_go_first_then_all(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    now = [100.0]
    monkeypatch.setattr(short_cache.time, "monotonic", lambda: now[0])
    cache: ShortCache[str, int] = ShortCache(most=3)
    cache.put("old", 1)
    now[0] += short_cache.TTL_S
    cache.put("a", 2)
    cache.put("b", 3)
    cache.put("c", 4)  # full: "old" has expired and makes room
    assert (len(cache), cache.get("old"), cache.get("a"), cache.get("c")) == (3, None, 2, 4)
    cache.put("d", 5)  # full of live answers: all go
    assert (len(cache), cache.get("a"), cache.get("d")) == (1, None, 5)
