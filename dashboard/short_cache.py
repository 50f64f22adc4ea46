"""What each process keeps for a few seconds of who is signed in: the session,
the user and the permission answers, three database reads a request would
otherwise make (their cost: docs/benchmarks.md, "bench/dashboard.py: page
loads with revocable sessions" and the perf-pages runs of 2026-12-02).

One lifetime for the three, so a change made in another process (a logout, a
password changed, a user deactivated, a permission taken away) applies
everywhere within ``TTL_S``. Changes made in this process apply at once: the
session engine deletes its own entry on logout, and signals (apps.py) clear
the users and the permission answers on any change to a user, a group or a
permission.
"""

from __future__ import annotations

import time
from typing import Any, Generic, TypeVar

from django.core.cache.backends.base import DEFAULT_TIMEOUT
from django.core.cache.backends.locmem import LocMemCache

TTL_S = 10.0

K = TypeVar("K")
V = TypeVar("V")


class ShortCache(Generic[K, V]):
    """Answers kept ``TTL_S`` seconds, at most ``most`` of them (past that the
    expired go, then all: bounded whoever signs in)."""

    def __init__(self, most: int = 1_000) -> None:
        self.most = most
        self._entries: dict[K, tuple[float, V]] = {}

    def get(self, key: K) -> V | None:
        found = self._entries.get(key)
        if found is None or found[0] <= time.monotonic():
            return None
        return found[1]

    def put(self, key: K, value: V) -> None:
        now = time.monotonic()
        if len(self._entries) >= self.most:
            # A copy to walk: other threads of the server may put meanwhile.
            for stale, (until, _) in list(self._entries.items()):
                if until <= now:
                    self._entries.pop(stale, None)
            if len(self._entries) >= self.most:
                self._entries.clear()
        self._entries[key] = (now + TTL_S, value)

    def clear(self, **_: object) -> None:
        """Everything goes (also a signal receiver: apps.py)."""
        self._entries.clear()

    def __len__(self) -> int:
        return len(self._entries)


class ShortLivedLocMemCache(LocMemCache):
    """The sessions' cache (settings.CACHES, for Django's ``cached_db`` engine):
    Django's per-process memory cache with every timeout capped to ``TTL_S``,
    whatever the engine asks for (the session's whole age)."""

    def get_backend_timeout(self, timeout: Any = DEFAULT_TIMEOUT) -> float | None:
        if timeout is DEFAULT_TIMEOUT or timeout is None or timeout > TTL_S:
            timeout = TTL_S
        return super().get_backend_timeout(timeout)
