"""The start-up checks name what a project is missing for the app (dashboard.checks)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from django.contrib.auth.base_user import AbstractBaseUser
from django.contrib.auth.models import User

from dashboard.checks import check_project, check_user_model


class PasswordOnlyUser(AbstractBaseUser):
    """A user model with no permissions (no PermissionsMixin)."""

    class Meta:
        abstract = True


def ids(problems: list[Any]) -> list[str]:
    return [problem.id for problem in problems]


def test_the_stand_alone_site_has_everything_the_app_needs() -> None:
    assert check_project() == []


def test_a_missing_middleware_or_context_processor_is_named(settings: Any) -> None:
    settings.MIDDLEWARE = [
        m
        for m in settings.MIDDLEWARE
        if m != "django.contrib.messages.middleware.MessageMiddleware"
    ]
    engine = settings.TEMPLATES[0]
    settings.TEMPLATES = [{**engine, "OPTIONS": {**engine["OPTIONS"], "context_processors": []}}]
    problems = check_project()
    assert ids(problems) == ["dashboard.E002"] + ["dashboard.E003"] * 3
    assert "MessageMiddleware" in problems[0].msg


def request_timer(get_response: Callable[[Any], Any]) -> Callable[[Any], Any]:
    """A function middleware, as Django's documentation writes one."""

    def middleware(request: Any) -> Any:
        return get_response(request)

    return middleware


def test_a_function_middleware_is_no_crash_of_the_check(settings: Any) -> None:
    settings.MIDDLEWARE = ["tests.test_checks.request_timer", *settings.MIDDLEWARE]
    assert check_project() == []


def test_a_user_model_without_permissions_is_warned_about() -> None:
    assert check_user_model(User) == []
    (warning,) = check_user_model(PasswordOnlyUser)
    assert warning.id == "dashboard.W001"
    assert "PermissionsMixin" in (warning.hint or "")
