"""The session, the user and the permission answers, each kept ``TTL_S`` per
process: three database reads a request would otherwise make (docs/benchmarks.md,
"page loads with revocable sessions"). A change made in another process applies
within ``TTL_S``, one made in this process at once (the session engine deletes
its entry on logout, signals wired in apps.py clear the users and the answers).
"""

from __future__ import annotations

import time
from typing import Any, Generic, TypeVar

from django.contrib import auth
from django.contrib.auth.middleware import AuthenticationMiddleware
from django.contrib.auth.models import AbstractBaseUser, AnonymousUser
from django.core.cache.backends.base import DEFAULT_TIMEOUT
from django.core.cache.backends.locmem import LocMemCache
from django.http import HttpRequest
from django.utils.functional import SimpleLazyObject

TTL_S = 10.0

K = TypeVar("K")
V = TypeVar("V")


class ShortCache(Generic[K, V]):
    """Answers kept ``TTL_S`` seconds; past ``most`` the expired go, then all."""

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

    def clear(self, **_: object) -> None:  # also a signal receiver (apps.py)
        self._entries.clear()

    def __len__(self) -> int:
        return len(self._entries)


class ShortLivedLocMemCache(LocMemCache):
    """The sessions' cache (settings.CACHES): Django's, every timeout capped to ``TTL_S``."""

    def get_backend_timeout(self, timeout: Any = DEFAULT_TIMEOUT) -> float | None:
        if timeout is DEFAULT_TIMEOUT or timeout is None or timeout > TTL_S:
            timeout = TTL_S
        return super().get_backend_timeout(timeout)


# By the session's (user id, backend, session hash): a cookie of another hash (a
# password changed since) misses and goes through Django's full check.
users: ShortCache[tuple[object, object, object], AbstractBaseUser] = ShortCache()


def cached_user(request: HttpRequest) -> AbstractBaseUser | AnonymousUser:
    session = request.session
    key = (
        session.get(auth.SESSION_KEY),
        session.get(auth.BACKEND_SESSION_KEY),
        session.get(auth.HASH_SESSION_KEY),
    )
    if None in key:  # nobody signed in (or a session Django would refuse): no cache
        return auth.get_user(request)
    found = users.get(key)
    if found is not None:
        return found
    user = auth.get_user(request)
    if user.is_authenticated:
        users.put(key, user)
    return user


class CachedAuthenticationMiddleware(AuthenticationMiddleware):
    """``request.user`` as Django's middleware sets it (lazily, the session
    checked first), read through the cache above. ``request.auser`` (async
    views: none of ours) stays Django's."""

    def process_request(self, request: HttpRequest) -> None:
        super().process_request(request)
        request.user = SimpleLazyObject(lambda: cached_user(request))  # type: ignore[assignment]
