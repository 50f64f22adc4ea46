"""``dashboard.settings`` safe by default, for production (docs/deploy.md):
``SECRET_KEY`` and ``ALLOWED_HOSTS`` required, ``DEBUG`` off, cookies HTTPS-only,
http redirected and HSTS for a year, each still off by its variable.
"""

from __future__ import annotations

import os

from django.core.exceptions import ImproperlyConfigured

from dashboard.settings import *  # noqa: F403
from dashboard.settings import env_flag, env_int

for _required in ("SECRET_KEY", "ALLOWED_HOSTS"):
    if not os.environ.get(_required, "").strip():
        raise ImproperlyConfigured(f"{_required} must be set in production (docs/deploy.md)")
if env_flag("DEBUG"):
    raise ImproperlyConfigured("DEBUG must be off in production: it shows settings and code")

SESSION_COOKIE_SECURE = env_flag("SESSION_COOKIE_SECURE", default=True)
CSRF_COOKIE_SECURE = env_flag("CSRF_COOKIE_SECURE", default=True)
SECURE_SSL_REDIRECT = env_flag("SECURE_SSL_REDIRECT", default=True)
# A year, for this host name only (includeSubDomains and preload stay opt-in:
# they commit other names than the dashboard's).
SECURE_HSTS_SECONDS = env_int("SECURE_HSTS_SECONDS", 365 * 24 * 3600)
