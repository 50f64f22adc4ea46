"""Logging in and out: Django's views, our pages, django-axes' throttling (a
locked-out username gets the login page, 429, saying when to try again).
"""

from __future__ import annotations

import math
from datetime import datetime, timedelta
from typing import Any

from axes.helpers import get_client_username, get_cool_off
from axes.models import AccessAttempt
from django.contrib import messages
from django.contrib.auth import views as auth_views
from django.contrib.auth.forms import AuthenticationForm
from django.db.models import Max
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.utils import timezone

# The stand-alone site's page (templates/login.html), not the app's: a project has its own.
LOGIN_TEMPLATE = "login.html"

login = auth_views.LoginView.as_view(template_name=LOGIN_TEMPLATE)


class LogoutView(auth_views.LogoutView):
    def post(self, request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
        response = super().post(request, *args, **kwargs)
        # Stored in a cookie: the session it would go into was just flushed.
        messages.info(request, "You are logged out.")
        return response


logout = LogoutView.as_view()


def _locked_until(request: HttpRequest, username: str | None, cool_off: timedelta) -> datetime:
    # Attempts made while locked out are not recorded (settings), so the
    # lockout ends one cool-off after the failure that started it.
    last = AccessAttempt.objects.filter(
        username=username, ip_address=getattr(request, "axes_ip_address", None)
    ).aggregate(last=Max("attempt_time"))["last"]
    return (last or timezone.now()) + cool_off


def _in_words(seconds: int) -> str:
    count, unit = (seconds, "second") if seconds < 60 else (math.ceil(seconds / 60), "minute")
    return f"{count} {unit}{'s' if count != 1 else ''}"


def lockout_response(
    request: HttpRequest,
    original_response: HttpResponse | None = None,
    credentials: dict[str, Any] | None = None,
) -> HttpResponse:
    """AXES_LOCKOUT_CALLABLE: the login form again, saying until when it is locked."""
    username = get_client_username(request, credentials)
    cool_off = get_cool_off(request) or timedelta(0)
    until = _locked_until(request, username, cool_off)
    seconds = max(1, math.ceil((until - timezone.now()).total_seconds()))
    lockout = (
        "Too many failed logins for this username from your address. "
        f"Try again after {until:%H:%M:%S} UTC (in {_in_words(seconds)})."
    )
    context = {
        "form": AuthenticationForm(request, initial={"username": username or ""}),
        "next": request.POST.get("next", ""),
        "lockout": lockout,
    }
    response = render(request, LOGIN_TEMPLATE, context, status=429)
    response["Retry-After"] = str(seconds)
    return response
