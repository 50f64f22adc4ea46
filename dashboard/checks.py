"""Start-up checks (``manage.py check``): what a project must have for the app to
work, which would otherwise show later as a 500 on the first page, nobody let
in, or a Redis server silently missing.
"""

from __future__ import annotations

from contextlib import suppress
from typing import Any

from django.apps import apps
from django.conf import settings
from django.contrib.auth import get_user_model
from django.core.checks import CheckMessage, Error, Warning
from django.utils.module_loading import import_string

from dashboard.core import conf, connections
from queues.connection import url_problem

REQUIRED_APPS = (
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "django_htmx",  # its template tag loads htmx, from its own static files
)
REQUIRED_MIDDLEWARE = (
    # JSON for every error under the API, a 503 when Redis is unreachable (dashboard.core.errors).
    "dashboard.core.errors.ErrorAnswersMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
)
REQUIRED_CONTEXT_PROCESSORS = (
    "django.template.context_processors.request",
    "django.contrib.auth.context_processors.auth",
    "django.contrib.messages.context_processors.messages",
)


def _middleware_classes() -> list[type]:
    """MIDDLEWARE's classes (a function middleware is none of ours)."""
    found = []
    for path in settings.MIDDLEWARE:
        with suppress(ImportError):  # Django reports a middleware it cannot import itself
            found.append(import_string(path))
    return [middleware for middleware in found if isinstance(middleware, type)]


def check_project(**_: Any) -> list[CheckMessage]:
    middleware = _middleware_classes()
    engines: list[dict[str, Any]] = settings.TEMPLATES
    processors = {
        processor
        for engine in engines
        if engine.get("BACKEND") == "django.template.backends.django.DjangoTemplates"
        for processor in engine.get("OPTIONS", {}).get("context_processors", [])
    }
    problems = [
        Error(f"'{app}' must be in INSTALLED_APPS for the dashboard.", id="dashboard.E001")
        for app in REQUIRED_APPS
        if not apps.is_installed(app)
    ]
    problems += [
        Error(f"'{name}' must be in MIDDLEWARE for the dashboard.", id="dashboard.E002")
        for name in REQUIRED_MIDDLEWARE
        if not any(issubclass(found, import_string(name)) for found in middleware)
    ]
    problems += [
        Error(
            f"'{processor}' must be in the context processors of a DjangoTemplates "
            "engine in TEMPLATES for the dashboard's pages.",
            id="dashboard.E003",
        )
        for processor in sorted(set(REQUIRED_CONTEXT_PROCESSORS) - processors)
    ]
    return [*problems, *check_user_model(get_user_model()), *check_connections()]


def check_connections() -> list[CheckMessage]:
    found: list[CheckMessage] = []
    url = conf.redis_url()
    wrong = url_problem(url) if url else None
    if wrong is not None:
        found.append(
            Error(
                f"REDIS_URL is not a URL Redis clients can use: {wrong}",
                hint="redis://host:6379/0, rediss://… for TLS, ?cluster=1 for Redis Cluster, "
                "redis+sentinel://host:26379,host:26379/<master name> behind Sentinel "
                "(docs/configuration.md).",
                id="dashboard.E005",
            )
        )
    found += [
        Error(
            problem,
            hint='Each entry: {"name": "staging", "url": "redis://host:6379/0", '
            '"prefixes": ["bull"], "queues": []} (docs/configuration.md, Several Redis servers).',
            id="dashboard.E004",
        )
        for problem in connections.problems()
    ]
    return found


def check_user_model(user_model: type) -> list[CheckMessage]:
    if hasattr(user_model, "has_perm"):
        return []
    return [
        Warning(
            f"{user_model.__name__} (AUTH_USER_MODEL) has no permissions, so no user may "
            "view the dashboard: it needs dashboard.view_queues.",
            hint="Add django.contrib.auth.models.PermissionsMixin to the user model.",
            id="dashboard.W001",
        )
    ]
