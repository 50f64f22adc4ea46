"""The stand-alone site's settings, read from the environment.

Every variable, its default and what it does: docs/configuration.md (behind an
HTTPS proxy: "Behind a proxy"); dashboard.settings_production turns the secure
ones on by default.
"""

from __future__ import annotations

import json
import os
from datetime import timedelta
from pathlib import Path

import dj_database_url
from django.core.exceptions import ImproperlyConfigured
from pythonjsonlogger.core import RESERVED_ATTRS

BASE_DIR = Path(__file__).resolve().parent.parent


def env_flag(name: str, default: bool = False) -> bool:
    value = os.environ.get(name)
    if value is None:
        return default
    return value.strip().lower() in {"1", "true", "yes", "on"}


def _env_list(name: str, default: str = "") -> list[str]:
    return [item.strip() for item in os.environ.get(name, default).split(",") if item.strip()]


def env_int(name: str, default: int) -> int:
    value = os.environ.get(name, "").strip()
    if not value:
        return default
    try:
        return int(value)
    except ValueError:
        raise ImproperlyConfigured(f"{name} must be an integer, got {value!r}") from None


def _env_json(name: str, default: object) -> object:
    """A JSON value; its shape is checked by the app's system checks."""
    value = os.environ.get(name, "").strip()
    if not value:
        return default
    try:
        return json.loads(value)
    except ValueError as error:
        raise ImproperlyConfigured(f"{name} is not valid JSON: {error}") from None


DEBUG = env_flag("DEBUG")
SECRET_KEY = os.environ.get("SECRET_KEY", "")
if not SECRET_KEY:
    if not DEBUG and not env_flag("ECHOMQ_DEV_SECRET", default=True):
        raise ImproperlyConfigured("SECRET_KEY must be set when DEBUG is off")
    # Development and tests only: a fixed key is fine when nothing is exposed.
    SECRET_KEY = "echomq-dev-insecure-key-set-SECRET_KEY-in-production"  # noqa: S105
ALLOWED_HOSTS = _env_list("ALLOWED_HOSTS", "localhost,127.0.0.1,[::1],testserver")

# HTTPS behind a proxy: all off by default, so plain http on localhost works.
# The origins a browser shows for this site, e.g. "https://queues.example.com".
CSRF_TRUSTED_ORIGINS = _env_list("CSRF_TRUSTED_ORIGINS")
# X-Forwarded-Proto: a request whose header says https is secure. Unset by
# default: trust it only behind a proxy that always sets (or strips) it.
_PROXY_HEADER = os.environ.get("SECURE_PROXY_SSL_HEADER", "").strip().upper().replace("-", "_")
SECURE_PROXY_SSL_HEADER = ("HTTP_" + _PROXY_HEADER, "https") if _PROXY_HEADER else None
USE_X_FORWARDED_HOST = env_flag("USE_X_FORWARDED_HOST")
SESSION_COOKIE_SECURE = env_flag("SESSION_COOKIE_SECURE")
CSRF_COOKIE_SECURE = env_flag("CSRF_COOKIE_SECURE")
SECURE_SSL_REDIRECT = env_flag("SECURE_SSL_REDIRECT")
SECURE_HSTS_SECONDS = env_int("SECURE_HSTS_SECONDS", 0)
SECURE_HSTS_INCLUDE_SUBDOMAINS = env_flag("SECURE_HSTS_INCLUDE_SUBDOMAINS")
SECURE_HSTS_PRELOAD = env_flag("SECURE_HSTS_PRELOAD")

# None means "resolve at first use" (queues.redis_server: private server or embedded).
REDIS_URL: str | None = os.environ.get("REDIS_URL") or None
ECHOMQ_QUEUES = _env_list("ECHOMQ_QUEUES")
ECHOMQ_PREFIXES = _env_list("ECHOMQ_PREFIXES", "bull")
ECHOMQ_CONNECTIONS = _env_json("ECHOMQ_CONNECTIONS", [])
ECHOMQ_READ_ONLY = env_flag("ECHOMQ_READ_ONLY")
ECHOMQ_HISTORY_COLLECTOR = env_flag("ECHOMQ_HISTORY_COLLECTOR", default=True)
# Each live page holds its inbox and outbox: a script opening sockets in a
# loop as one user would otherwise grow the server without bound (per process).
ECHOMQ_LIVE_SOCKETS_PER_USER = env_int("ECHOMQ_LIVE_SOCKETS_PER_USER", 30)
ECHOMQ_METRICS_TOKEN = os.environ.get("ECHOMQ_METRICS_TOKEN", "").strip() or None

INSTALLED_APPS = [
    "daphne",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "django_htmx",
    "channels",
    "axes",
    "dashboard",
]

MIDDLEWARE = [
    # First, so HSTS and nosniff are on every answer, static files included.
    "django.middleware.security.SecurityMiddleware",
    "whitenoise.middleware.WhiteNoiseMiddleware",
    # Above everything that can fail: it sees every error answer (dashboard.core.errors).
    "dashboard.core.errors.ErrorAnswersMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    # Django's, with the signed-in user kept briefly per process (dashboard.core.short_cache).
    "dashboard.core.short_cache.CachedAuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    "dashboard.middleware.ContentSecurityPolicyMiddleware",
    # Last, as django-axes asks: it turns a locked-out login into the lockout page.
    "axes.middleware.AxesMiddleware",
]

# The app (dashboard.urls) at the root, and the site's own login and error pages.
ROOT_URLCONF = "dashboard.site_urls"
ASGI_APPLICATION = "dashboard.asgi.application"
# No CHANNEL_LAYERS: the live updates need none (each process's readers hand
# their batches to its sockets in process: dashboard.live.hub).

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        # The checkout's templates: the site's own pages at the top, the app's
        # under dashboard/ (an installed wheel holds those in the app: APP_DIRS).
        "DIRS": [BASE_DIR / "templates"],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
            ],
        },
    },
]

# Users, sessions, lockouts and the audit trail: SQLite serves one host's
# processes; several hosts share one database by DATABASE_URL (docs/deploy.md).
if os.environ.get("DATABASE_URL", "").strip():
    DATABASES = {
        "default": dj_database_url.parse(
            os.environ["DATABASE_URL"].strip(),
            conn_max_age=env_int("DATABASE_CONN_MAX_AGE", 0),
            conn_health_checks=True,
        )
    }
else:
    DATABASES = {
        "default": {
            "ENGINE": "django.db.backends.sqlite3",
            "NAME": os.environ.get("ECHOMQ_DB", str(BASE_DIR / "db.sqlite3")),
        }
    }

AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
]
LOGIN_URL = "login"
LOGIN_REDIRECT_URL = "dashboard:overview"
LOGOUT_REDIRECT_URL = "login"
# The app's settings and their defaults: dashboard.core.conf.
ECHOMQ_LOGOUT_URL = "logout"
# A CSRF failure under /api/ answers JSON like every API error; pages get a page.
CSRF_FAILURE_VIEW = "dashboard.core.errors.csrf_failure"

# Login throttling (django-axes): five wrong passwords for one username from one
# address lock that pair out for 15 minutes; locked attempts are refused before
# any hashing and do not extend it (so the time the page names holds), and an
# unknown username is locked like a real one.
AUTHENTICATION_BACKENDS = [
    "axes.backends.AxesStandaloneBackend",
    "django.contrib.auth.backends.ModelBackend",
]
AXES_FAILURE_LIMIT = env_int("ECHOMQ_LOGIN_FAILURE_LIMIT", 5)
AXES_COOLOFF_TIME = timedelta(seconds=env_int("ECHOMQ_LOGIN_COOLOFF_SECONDS", 15 * 60))
AXES_LOCKOUT_PARAMETERS = [["username", "ip_address"]]
AXES_RESET_ON_SUCCESS = True
AXES_RESET_COOL_OFF_ON_FAILURE_DURING_LOCKOUT = False
AXES_LOCKOUT_CALLABLE = "dashboard.site.accounts.lockout_response"
# One row per successful login, kept for ever and shown nowhere: not kept.
AXES_DISABLE_ACCESS_LOG = True
# Logged with what locks (username, address), and no banner at every start.
AXES_VERBOSE = False

# Sessions in the database, so logging out revokes every copy of the cookie
# (within short_cache.TTL_S in other processes, which keep what they read that
# long); signed-cookie sessions could not be revoked.
SESSION_ENGINE = "django.contrib.sessions.backends.cached_db"
SESSION_CACHE_ALIAS = "sessions"
CACHES = {
    "default": {"BACKEND": "django.core.cache.backends.locmem.LocMemCache"},
    "sessions": {
        "BACKEND": "dashboard.core.short_cache.ShortLivedLocMemCache",
        "OPTIONS": {"MAX_ENTRIES": 10_000},
    },
}
# Django's defaults hold the rest: HttpOnly, SameSite=Lax cookies, X-Frame-Options
# DENY, nosniff, a same-origin Referer, aware datetimes.
TIME_ZONE = "UTC"
USE_I18N = False

STATIC_URL = "/static/"
# The checkout's static files (the app's, under dashboard/; a wheel holds them in the app).
STATICFILES_DIRS = [BASE_DIR / "static"]
# WhiteNoise serves the app's own files, found once at start-up, so nothing
# needs collectstatic; STATIC_ROOT is for a proxy that serves them itself.
WHITENOISE_USE_FINDERS = True
STATIC_ROOT = os.environ.get("STATIC_ROOT") or None
if STATIC_ROOT:
    # Collected files under hashed names, the modules' imports included.
    STORAGES = {
        "default": {"BACKEND": "django.core.files.storage.FileSystemStorage"},
        "staticfiles": {"BACKEND": "dashboard.site.static_files.HashedStaticFiles"},
    }

# One format for every log line of a process, all through the root logger's one
# handler; LOG_FORMAT=json writes one JSON object a line with the same fields.
LOG_LEVEL = os.environ.get("LOG_LEVEL", "INFO").strip().upper()
if LOG_LEVEL not in {"DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL"}:
    raise ImproperlyConfigured(
        f"LOG_LEVEL must be DEBUG, INFO, WARNING, ERROR or CRITICAL, got {LOG_LEVEL!r}"
    )
LOG_FORMAT = os.environ.get("LOG_FORMAT", "plain").strip().lower()
if LOG_FORMAT not in {"plain", "json"}:
    raise ImproperlyConfigured(f"LOG_FORMAT must be plain or json, got {LOG_FORMAT!r}")
_LOG_FIELDS = "%(asctime)s %(levelname)s %(name)s %(message)s"
# Loggers that arrive with handlers of their own: emptied, so their records
# reach the root handler only, once.
_OWN_HANDLERS = [
    "django", "django.server", "py.warnings", "uvicorn", "uvicorn.error", "uvicorn.access",
]  # fmt: skip
LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "formatters": {
        "plain": {"format": _LOG_FIELDS},
        "json": {
            "()": "pythonjsonlogger.json.JsonFormatter",
            "fmt": _LOG_FIELDS,
            "rename_fields": {"asctime": "time", "levelname": "level", "name": "logger"},
            # uvicorn repeats each message with terminal colours: not in the JSON.
            "reserved_attrs": [*RESERVED_ATTRS, "color_message"],
        },
    },
    "filters": {"one_line_refusals": {"()": "dashboard.site.log_filters.OneLineRefusals"}},
    "handlers": {
        "console": {"class": "logging.StreamHandler", "formatter": LOG_FORMAT, "level": LOG_LEVEL}
    },
    "root": {"handlers": ["console"], "level": LOG_LEVEL},
    "loggers": {
        **{name: {"handlers": [], "propagate": True} for name in _OWN_HANDLERS},
        # A refused request (403, 400) is one line, not a traceback.
        "django.request": {"filters": ["one_line_refusals"], "propagate": True},
    },
}
