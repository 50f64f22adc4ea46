"""The dashboard's HTTP side under maintained bridges, to compare with dashboard.site.http.

    python bench/dashboard.py --app bench.http_bridges:django_asgi
    python bench/dashboard.py --app bench.http_bridges:asgiref_wsgi
    python bench/dashboard.py --app bench.http_bridges:a2wsgi_pool   # pip install a2wsgi

Each serves the same Django project (settings, middleware, views, WhiteNoise)
over HTTP only, as ``dashboard.asgi:application`` does with
``dashboard.site.http.ThreadedDjangoHTTP``:

- ``django_asgi``: Django's own ASGI handler. The views are synchronous, so
  each middleware hook, the view and the request signals run through
  asgiref's one thread for synchronous code.
- ``asgiref_wsgi``: asgiref's ``WsgiToAsgi`` around Django's WSGI handler: the
  whole request in one call, in that same one thread.
- ``a2wsgi_pool``: a2wsgi's ``WSGIMiddleware`` around Django's WSGI handler,
  in a pool of 8 threads (as ThreadedDjangoHTTP's); the body is read and the
  response sent through the event loop, one hop per message.
"""

from __future__ import annotations

import os
from typing import Any

from django.core.asgi import get_asgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "dashboard.settings")
django_asgi = get_asgi_application()

from asgiref.wsgi import WsgiToAsgi  # noqa: E402
from django.core.handlers.wsgi import WSGIHandler  # noqa: E402

asgiref_wsgi = WsgiToAsgi(WSGIHandler())


def __getattr__(name: str) -> Any:
    if name == "a2wsgi_pool":  # built on demand: a2wsgi is no dependency of the project
        from a2wsgi import WSGIMiddleware

        return WSGIMiddleware(WSGIHandler(), workers=8)
    raise AttributeError(name)
