"""Who is signed in, kept briefly per process: Django's AuthenticationMiddleware
loads the user from the database on every request.

Measured (2026-12-02, in-process CPU, Django test client, the failed list's
JSON of 50 rows): the user's SELECT was about a fifth of the request's CPU,
the largest part after the Redis reads (docs/benchmarks.md, "Runs of
2026-12-02 (perf-pages)"). The session is kept the same way
(dashboard.session_cache), so a page or API answer does no database work.

What is cached is the answer of ``django.contrib.auth.get_user`` for one
session's (user id, backend, session hash) triple, for ``USER_CACHE_TTL_S``
seconds, like the permission answers (dashboard.permissions). The session
hash is in the key: a cookie carrying another hash (a password changed since
it was issued) is a miss and goes through Django's full check. Changes made in
this process (a save or delete of a user, a login, a logout, a permission or
group change) clear it at once (signals wired in apps.py); changes from
another process (an admin on another host deactivating a user or changing a
password) apply within the TTL, as they already do for permissions. Logging
out removes the user from the session, so the next request finds no user id
and never reaches the cache. Entries are per user and hash, so the cache is
bounded by the users who signed in within the TTL; ``MAX_USERS`` caps it
whatever happens.
"""

from __future__ import annotations

import time
from typing import Any

from django.contrib import auth
from django.contrib.auth.middleware import AuthenticationMiddleware
from django.contrib.auth.models import AbstractBaseUser, AnonymousUser
from django.http import HttpRequest
from django.utils.functional import SimpleLazyObject

USER_CACHE_TTL_S = 10.0
MAX_USERS = 1_000
_users: dict[tuple[object, object, object], tuple[float, AbstractBaseUser]] = {}


def clear_user_cache(**_: object) -> None:
    _users.clear()


def cached_user(request: HttpRequest) -> AbstractBaseUser | AnonymousUser:
    session = request.session
    key = (
        session.get(auth.SESSION_KEY),
        session.get(auth.BACKEND_SESSION_KEY),
        session.get(auth.HASH_SESSION_KEY),
    )
    if None in key:  # nobody signed in (or a session Django would refuse): no cache
        return auth.get_user(request)
    now = time.monotonic()
    found = _users.get(key)
    if found is not None and found[0] > now:
        return found[1]
    user = auth.get_user(request)
    if user.is_authenticated:
        if len(_users) >= MAX_USERS:
            # A copy to walk: other threads of the server may add meanwhile.
            for stale, (until, _) in list(_users.items()):
                if until <= now:
                    _users.pop(stale, None)
            if len(_users) >= MAX_USERS:
                _users.clear()
        _users[key] = (now + USER_CACHE_TTL_S, user)
    return user


class CachedAuthenticationMiddleware(AuthenticationMiddleware):
    """``request.user`` as Django's middleware sets it (lazily, the session
    checked first), read through the cache above. ``request.auser`` (async
    views: none of ours) stays Django's."""

    def process_request(self, request: HttpRequest) -> None:
        super().process_request(request)
        request.user = SimpleLazyObject(lambda: _request_user(request))  # type: ignore[assignment]


def _request_user(request: Any) -> AbstractBaseUser | AnonymousUser:
    # Django's lazy user keeps its answer on the request; so does this.
    if not hasattr(request, "_cached_user"):
        request._cached_user = cached_user(request)
    return request._cached_user  # type: ignore[no-any-return]
