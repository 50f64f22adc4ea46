"""Who may see and who may act: an active staff user with
``dashboard.view_queues`` views, ``dashboard.act_on_queues`` also acts,
``dashboard.change_jobs`` (granted apart) changes jobs; ``ECHOMQ_READ_ONLY``
turns acting and changing off for everyone. Pages send anonymous users to
``LOGIN_URL``; the API answers JSON.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import partial, wraps
from typing import Any, Literal, TypeVar, cast

from django.contrib.auth.models import AbstractBaseUser, AnonymousUser
from django.contrib.auth.views import redirect_to_login
from django.core.exceptions import PermissionDenied
from django.http import HttpRequest, HttpResponse

from dashboard.core.conf import read_only as read_only
from dashboard.core.errors import json_error
from dashboard.core.short_cache import ShortCache

V = TypeVar("V", bound=Callable[..., HttpResponse])
VIEW_PERMISSION = "dashboard.view_queues"
ACT_PERMISSION = "dashboard.act_on_queues"
CHANGE_PERMISSION = "dashboard.change_jobs"
# What a view needs: to see, to act on jobs, or to change them.
Need = Literal["view", "act", "change"]
_NEEDED = {"act": ACT_PERMISSION, "change": CHANGE_PERMISSION}


# Permission answers per user, kept briefly (dashboard.core.short_cache): has_perm
# costs two database queries per request otherwise.
permission_answers: ShortCache[tuple[object, str, str], bool] = ShortCache()


def _has_perm(user: AbstractBaseUser | AnonymousUser, permission: str) -> bool:
    # Custom user models without PermissionsMixin hold no permissions.
    check = getattr(user, "has_perm", None)
    if check is None:
        return False
    key = (user.pk, user.get_username(), permission)
    allowed = permission_answers.get(key)
    if allowed is None:
        allowed = bool(check(permission))
        permission_answers.put(key, allowed)
    return allowed


def can_view(user: AbstractBaseUser | AnonymousUser) -> bool:
    # A user model with no staff flag leaves it to the permission (docs/mounting.md).
    return bool(
        user.is_authenticated
        and user.is_active
        and getattr(user, "is_staff", True)
        and _has_perm(user, VIEW_PERMISSION)
    )


def can_act(user: AbstractBaseUser | AnonymousUser) -> bool:
    return not read_only() and can_view(user) and _has_perm(user, ACT_PERMISSION)


def can_change(user: AbstractBaseUser | AnonymousUser) -> bool:
    return not read_only() and can_view(user) and _has_perm(user, CHANGE_PERMISSION)


def _denial(request: HttpRequest, *, need: Need) -> str | None:
    """Why the request may not proceed ("login", "view", "act", "change",
    "read_only"), or None."""
    user = request.user
    if not user.is_authenticated:
        return "login"
    if not can_view(user):
        return "view"
    if need != "view" and read_only():
        return "read_only"
    if need != "view" and not _has_perm(user, _NEEDED[need]):
        return need
    return None


def read_only_note() -> str:
    """What the pages say where their action buttons would be, when they are off
    for everyone ("" when they are not)."""
    return _MESSAGES["read_only"] if read_only() else ""


_MESSAGES = {
    "login": "Log in to use the dashboard.",
    "view": "Your account may not view queues (needs staff and dashboard.view_queues).",
    "act": "Your account may view queues but not act on them (needs dashboard.act_on_queues).",
    "change": "Your account may not edit, duplicate or add jobs (needs dashboard.change_jobs).",
    "read_only": "The dashboard is read-only (ECHOMQ_READ_ONLY): actions are turned off.",
}


def guarded(*, api: bool, act: bool = False, change: bool = False) -> Callable[[V], V]:
    """A view let through for those who may, else refused: under the API as a JSON
    401 (anonymous users) or 403, on a page by the login redirect or a 403 page."""
    need: Need = "change" if change else "act" if act else "view"

    def decorate(view: V) -> V:
        @wraps(view)
        def wrapper(request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
            # Every POST acts at least, whatever the view says.
            posted = need == "view" and request.method == "POST"
            denial = _denial(request, need="act" if posted else need)
            if denial is None:
                return view(request, *args, **kwargs)
            if api and denial == "login":
                return json_error(401, "unauthenticated", _MESSAGES[denial])
            if api:
                return json_error(403, "forbidden", _MESSAGES[denial])
            if denial == "login":
                return redirect_to_login(request.get_full_path())
            raise PermissionDenied(_MESSAGES[denial])

        return cast(V, wrapper)

    return decorate


page_permission = partial(guarded, api=False)
api_permission = partial(guarded, api=True)


def user_label(user: Any) -> str:
    return str(getattr(user, "get_username", lambda: "anonymous")())
