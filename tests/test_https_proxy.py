"""Behind an HTTPS-terminating proxy: the settings that make a login through it
work (trusted origins, the proxy's scheme header), secure cookies and HSTS,
each read from the environment; and the HTTP bridge passes the scheme on."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from django.test import Client

from dashboard.site.http import ThreadedDjangoHTTP
from tests.test_views_http import _call, _scope

ROOT = Path(__file__).resolve().parents[1]
PASSWORD = "the-right-pass-1"
PUBLIC = "https://queues.example.com"
# What the proxy adds to every request it forwards over plain http.
PROXIED = {
    "HTTP_HOST": "queues.example.com",
    "HTTP_ORIGIN": PUBLIC,
    "HTTP_X_FORWARDED_PROTO": "https",
}


@pytest.fixture
def ann(make_user: Any, settings: Any) -> Any:
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]
    settings.ALLOWED_HOSTS = ["queues.example.com"]
    user = make_user("viewer", username="ann")
    user.set_password(PASSWORD)
    user.save()
    return user


def _login_through_proxy() -> Any:
    """The browser's login form, as the proxy forwards it (CSRF enforced)."""
    client = Client(enforce_csrf_checks=True, **PROXIED)
    client.get("/login/")
    token = client.cookies["csrftoken"].value
    form = {"username": "ann", "password": PASSWORD, "csrfmiddlewaretoken": token}
    return client.post("/login/", form, HTTP_REFERER=PUBLIC + "/login/")


def test_a_login_through_the_proxy_fails_without_settings(ann: Any) -> None:
    response = _login_through_proxy()
    assert response.status_code == 403
    # Our CSRF failure page says why (dashboard.core.errors.csrf_failure).
    assert "Origin checking failed" in response.content.decode()


def test_trusting_the_proxys_scheme_header_lets_the_login_through(ann: Any, settings: Any) -> None:
    settings.SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")
    response = _login_through_proxy()
    assert response.status_code == 302, response.content[:500]


def test_a_trusted_origin_lets_the_login_through(ann: Any, settings: Any) -> None:
    settings.CSRF_TRUSTED_ORIGINS = [PUBLIC]
    response = _login_through_proxy()
    assert response.status_code == 302, response.content[:500]


def test_secure_cookies_and_hsts_when_the_settings_say_so(ann: Any, settings: Any) -> None:
    settings.SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")
    settings.SESSION_COOKIE_SECURE = True
    settings.CSRF_COOKIE_SECURE = True
    settings.SECURE_HSTS_SECONDS = 31_536_000
    settings.SECURE_HSTS_INCLUDE_SUBDOMAINS = True
    response = _login_through_proxy()
    assert response.status_code == 302
    assert response.cookies["sessionid"]["secure"] is True
    assert response["Strict-Transport-Security"] == "max-age=31536000; includeSubDomains"
    login_page = Client(**PROXIED).get("/login/")
    assert login_page.cookies["csrftoken"]["secure"] is True


def test_by_default_cookies_are_not_secure_and_there_is_no_hsts(ann: Any) -> None:
    page = Client(**PROXIED).get("/login/")
    assert page.cookies["csrftoken"]["secure"] == ""
    assert "Strict-Transport-Security" not in page


def _settings_from(environ: dict[str, str]) -> dict[str, Any]:
    names = [
        "CSRF_TRUSTED_ORIGINS", "SECURE_PROXY_SSL_HEADER", "USE_X_FORWARDED_HOST",
        "SESSION_COOKIE_SECURE", "CSRF_COOKIE_SECURE", "SECURE_SSL_REDIRECT",
        "SECURE_HSTS_SECONDS", "SECURE_HSTS_INCLUDE_SUBDOMAINS", "SECURE_HSTS_PRELOAD",
    ]  # fmt: skip
    code = (
        "import json; from dashboard import settings as s; "
        f"print(json.dumps({{n: getattr(s, n) for n in {names!r}}}))"
    )
    env = {k: v for k, v in os.environ.items() if k not in names} | environ
    done = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, env=env, capture_output=True, text=True, check=True
    )
    values: dict[str, Any] = json.loads(done.stdout)
    return values


def test_the_settings_come_from_the_environment() -> None:
    assert _settings_from({}) == {
        "CSRF_TRUSTED_ORIGINS": [],
        "SECURE_PROXY_SSL_HEADER": None,
        "USE_X_FORWARDED_HOST": False,
        "SESSION_COOKIE_SECURE": False,
        "CSRF_COOKIE_SECURE": False,
        "SECURE_SSL_REDIRECT": False,
        "SECURE_HSTS_SECONDS": 0,
        "SECURE_HSTS_INCLUDE_SUBDOMAINS": False,
        "SECURE_HSTS_PRELOAD": False,
    }
    behind_proxy = {
        "CSRF_TRUSTED_ORIGINS": "https://queues.example.com, https://ops.example.com",
        "SECURE_PROXY_SSL_HEADER": "X-Forwarded-Proto",
        "USE_X_FORWARDED_HOST": "1",
        "SESSION_COOKIE_SECURE": "1",
        "CSRF_COOKIE_SECURE": "true",
        "SECURE_SSL_REDIRECT": "yes",
        "SECURE_HSTS_SECONDS": "31536000",
        "SECURE_HSTS_INCLUDE_SUBDOMAINS": "1",
        "SECURE_HSTS_PRELOAD": "1",
    }
    assert _settings_from(behind_proxy) == {
        "CSRF_TRUSTED_ORIGINS": ["https://queues.example.com", "https://ops.example.com"],
        "SECURE_PROXY_SSL_HEADER": ["HTTP_X_FORWARDED_PROTO", "https"],
        "USE_X_FORWARDED_HOST": True,
        "SESSION_COOKIE_SECURE": True,
        "CSRF_COOKIE_SECURE": True,
        "SECURE_SSL_REDIRECT": True,
        "SECURE_HSTS_SECONDS": 31536000,
        "SECURE_HSTS_INCLUDE_SUBDOMAINS": True,
        "SECURE_HSTS_PRELOAD": True,
    }


async def test_the_bridge_passes_an_https_scheme_to_django(
    transactional_db: None, settings: Any
) -> None:
    """daphne --proxy-headers puts the proxy's scheme in the ASGI scope."""
    settings.SESSION_COOKIE_SECURE = True
    settings.CSRF_COOKIE_SECURE = True
    settings.SECURE_HSTS_SECONDS = 60
    app = ThreadedDjangoHTTP(threads=1)
    scope = _scope("GET", "/login/", headers=[("Host", "localhost")])
    scope.update(scheme="https", server=None)
    sent = await _call(app, scope, [])
    headers = [(k.decode(), v.decode()) for k, v in sent[0]["headers"]]
    assert ("Strict-Transport-Security", "max-age=60") in headers
    (cookie,) = [v for k, v in headers if k == "Set-Cookie"]
    assert "Secure" in cookie
    plain = await _call(app, _scope("GET", "/login/", headers=[("Host", "localhost")]), [])
    assert not any(k == b"Strict-Transport-Security" for k, _ in plain[0]["headers"])
