"""The stand-alone site's URLs (ROOT_URLCONF of dashboard.settings): the app at
the root, the site's own login and logout, and its error pages.

A project that installs the app has its own of all of these; it includes
``dashboard.urls`` as this file does, under any prefix.
"""

from __future__ import annotations

from django.urls import URLPattern, URLResolver, include, path

from dashboard.site import accounts

urlpatterns: list[URLPattern | URLResolver] = [
    path("login/", accounts.login, name="login"),
    path("logout/", accounts.logout, name="logout"),
    path("", include("dashboard.urls")),
]

# Error answers Django gives itself: JSON under the API, pages elsewhere
# (dashboard.core.errors; the other codes are turned into JSON by its middleware).
handler400 = "dashboard.core.errors.bad_request"
handler403 = "dashboard.core.errors.permission_denied"
handler404 = "dashboard.core.errors.page_not_found"
