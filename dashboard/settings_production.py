"""The stand-alone dashboard in production: ``dashboard.settings``, safe by default.

Selected with ``DJANGO_SETTINGS_MODULE=dashboard.settings_production`` (see
docs/deploy.md). Everything still comes from the environment, as in
``dashboard.settings``; what changes is what an unset variable means:

- ``SECRET_KEY`` and ``ALLOWED_HOSTS`` must be set (no development key, no
  localhost default), and ``DEBUG`` must not be on;
- the session and CSRF cookies are HTTPS-only, plain http is redirected to
  https, and ``Strict-Transport-Security`` is sent for a year.

Each of the last can still be turned off by its variable (e.g.
``SECURE_SSL_REDIRECT=0`` when the proxy redirects itself), for which
``manage.py check --deploy`` then warns. The server must know which requests
came over HTTPS: ``daphne --proxy-headers`` (or uvicorn, which reads the
header by default) behind a proxy that sets ``X-Forwarded-Proto``, or
``SECURE_PROXY_SSL_HEADER``.
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
