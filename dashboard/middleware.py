"""Security headers the stock middleware does not send (Django 5.2 has no CSP)."""

from __future__ import annotations

from django.conf import settings
from django.core.exceptions import DisallowedHost
from django.http import HttpRequest, HttpResponse
from django.utils.deprecation import MiddlewareMixin

# No inline script or style anywhere: everything is a static file of ours.
# connect-src is completed per request (socket_sources): 'self' alone does not
# cover the live socket's ws:// URL in every browser, and "ws: wss:" let a page
# connect to any host.
CONTENT_SECURITY_POLICY = "; ".join(
    [
        "default-src 'self'",
        "script-src 'self'",
        "style-src 'self'",
        "img-src 'self' data:",
        "connect-src 'self'{sockets}",
        "font-src 'self'",
        "object-src 'none'",
        "base-uri 'self'",
        "form-action 'self'",
        "frame-ancestors 'none'",
    ]
)
_SOCKET_SCHEME = {"http": "ws", "https": "wss"}


def socket_sources(request: HttpRequest) -> list[str]:
    """Where the live socket may connect: the origins its Origin check accepts (this
    host with the request's scheme, and CSRF_TRUSTED_ORIGINS) as WebSocket URLs."""
    try:
        host = request.get_host()  # checked against ALLOWED_HOSTS: no stray characters
    except DisallowedHost:
        host = ""
    sources = [f"{'wss' if request.is_secure() else 'ws'}://{host}"] if host else []
    for origin in settings.CSRF_TRUSTED_ORIGINS:
        scheme, separator, rest = origin.partition("://")
        if separator and scheme in _SOCKET_SCHEME:
            sources.append(f"{_SOCKET_SCHEME[scheme]}://{rest}")
    return list(dict.fromkeys(sources))


class ContentSecurityPolicyMiddleware(MiddlewareMixin):
    """Sync and async alike, so under ASGI it adds no thread switch."""

    def process_response(self, request: HttpRequest, response: HttpResponse) -> HttpResponse:
        if "Content-Security-Policy" not in response:
            sockets = "".join(f" {source}" for source in socket_sources(request))
            response["Content-Security-Policy"] = CONTENT_SECURITY_POLICY.format(sockets=sockets)
        return response
