"""Who is signed in, kept briefly per process (dashboard.core.short_cache):
Django's AuthenticationMiddleware loads the user from the database on every
request, about a fifth of an API answer's CPU.

The key is the session's (user id, backend, session hash) triple: a cookie
carrying another hash (a password changed since it was issued) is a miss and
goes through Django's full check. Logging out removes the user from the
session, so the next request finds no user id and never reaches the cache.
"""

from __future__ import annotations

from typing import Any

from django.contrib import auth
from django.contrib.auth.middleware import AuthenticationMiddleware
from django.contrib.auth.models import AbstractBaseUser, AnonymousUser
from django.http import HttpRequest
from django.utils.functional import SimpleLazyObject

from dashboard.core.short_cache import ShortCache

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
        request.user = SimpleLazyObject(lambda: _request_user(request))  # type: ignore[assignment]


def _request_user(request: Any) -> AbstractBaseUser | AnonymousUser:
    # Django's lazy user keeps its answer on the request; so does this.
    if not hasattr(request, "_cached_user"):
        request._cached_user = cached_user(request)
    return request._cached_user  # type: ignore[no-any-return]
