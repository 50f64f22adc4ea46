"""The web helpers every feature's views use: the API's error wrapper and body
readers, the page renderer, the htmx check, the safe redirect back and what
every tab of a queue shows above its own part.

One public module so a feature's views (page or API) import these rather than
another view module's private names: the feature modules then sit beside
``views.py`` and ``api.py`` in the import graph, not above them."""

from __future__ import annotations

import re
from collections.abc import Callable
from functools import cache, wraps
from typing import Any, TypeVar, cast

import msgspec
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.utils.http import url_has_allowed_host_and_scheme
from django_htmx.middleware import HtmxDetails

from dashboard.acting import actions
from dashboard.core import conf, json_input
from dashboard.core.errors import json_error
from dashboard.core.permissions import can_act, can_change, read_only, read_only_note
from dashboard.core.queue_urls import queue_url
from dashboard.shared import bodies, charts, presenters
from dashboard.shared.health import Workers
from queues.keys import InvalidName
from queues.numerals import NotWholeNumber, parse_whole
from queues.read import counts
from queues.read.refs import QueueRef

V = TypeVar("V", bound=Callable[..., HttpResponse])
B = TypeVar("B", bound=bodies.Body)
# The rows a list page offers to show at once.
PAGE_SIZES = (20, 50, 100, 200)


class BadInput(ValueError):
    pass


def json_errors(view: V) -> V:
    """Turn lookups' 404s and bad input into JSON errors (never an HTML page)."""

    @wraps(view)
    def wrapper(request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
        try:
            return view(request, *args, **kwargs)
        except Http404 as error:
            return json_error(404, "not_found", str(error) or "Not found")
        except actions.ActionRefused as error:
            return json_error(error.status, error.code, str(error))
        except (BadInput, InvalidName) as error:
            return json_error(400, "bad_request", str(error))

    return cast(V, wrapper)


def request_body(request: HttpRequest, shape: type[B]) -> B:
    """A POST's fields as ``shape`` (dashboard.shared.bodies): its JSON object, or its
    form fields (``ids`` as a list); BadInput saying what is wrong."""
    if request.content_type == "application/json":
        try:
            fields = json_input.loads(request.body or b"{}", "The body")
        except json_input.JsonRefused as error:
            raise BadInput(str(error)) from None
        if not isinstance(fields, dict):
            raise BadInput("The body must be a JSON object")
    else:
        fields = {key: request.POST.get(key) for key in request.POST}
        if "ids" in request.POST:
            fields["ids"] = request.POST.getlist("ids")
    for name, default in _words(shape).items():
        value = fields.get(name)
        if value is None or value == "":
            fields[name] = default
        elif isinstance(value, str) and not _utf8(value):
            raise BadInput(f"{name} is not valid Unicode text")
    try:
        return msgspec.convert(fields, shape)
    except msgspec.ValidationError as error:
        found = _FIELD.search(str(error))
        name = found.group(1) if found else "The body"
    except UnicodeEncodeError:  # msgspec's, for half a character where a list goes
        name = next(k for k, v in fields.items() if isinstance(v, str) and not _utf8(v))
    raise BadInput(shape.refusals.get(name, f"{name} must be a string"))


def whole_number(value: object, low: int, high: int, *, must: str, within: str) -> int:
    """A JSON integer or a string of digits (a form field) from ``low`` to
    ``high``; else BadInput saying ``must`` (not one) or ``within`` (out of range)."""
    if isinstance(value, str):
        try:
            value = parse_whole(value.strip())
        except NotWholeNumber:
            raise BadInput(must) from None
    if isinstance(value, bool) or not isinstance(value, int):
        raise BadInput(must)
    if not low <= value <= high:
        raise BadInput(within)
    return value


# msgspec's words for where a value is wrong: "... - at `$.ids[0]`", "... field `ids`".
_FIELD = re.compile(r"(?:at `\$\.|field `)(\w+)")


@cache
def _words(shape: type[bodies.Body]) -> dict[str, str]:
    """The text fields of ``shape`` (marked bodies.Words) and their defaults."""
    return {
        field.name: "" if field.required else field.default
        for field in msgspec.structs.fields(shape)
        if any(isinstance(mark, bodies.Words) for mark in getattr(field.type, "__metadata__", ()))
    }


def _utf8(text: str) -> bool:
    # JSON lets "\ud800" (half a character) through; Redis takes UTF-8 only.
    try:
        text.encode()
    except UnicodeEncodeError:
        return False
    return True


def is_htmx(request: HttpRequest) -> bool:
    """An htmx swap, which wants only the fragment it replaces.

    htmx 2 sends ``HX-Request`` on a history restore too (Back to a URL it
    pushed, when its snapshot is gone): that request gets the whole page, or
    the bare fragment would become the page. Views answering both ways also
    vary on ``HX-Request``, so the browser's cache never hands a fragment to a
    plain navigation of the same URL (Back after leaving the page).

    Read from the headers here rather than from django-htmx's middleware, so
    a project need not install that middleware for the app."""
    htmx = HtmxDetails(request)
    return bool(htmx) and not htmx.history_restore_request


def render_page(
    request: HttpRequest, template: str, context: dict[str, Any], status: int = 200
) -> HttpResponse:
    """``template`` rendered with what every page needs to know of the user and the site."""
    context.update(
        can_act=can_act(request.user),
        can_change=can_change(request.user),
        max_job_data_bytes=conf.max_job_data_bytes(),
        read_only=read_only(),
        read_only_note=read_only_note(),
    )
    return render(request, template, context, status=status)


def queue_context(
    ref: QueueRef,
    summary: counts.QueueSummary,
    tab: str,
    workers: Workers | None = None,
    *,
    chart: bool = True,
) -> dict[str, Any]:
    """What every tab of a queue shows above its own part; ``workers`` (when
    counted) lets the health say "no workers" rather than "nothing active".
    ``chart``: the header's chart is read (its history and audit rows) for a
    whole page, not for a fragment, which does not show it."""
    base_url = queue_url("dashboard:queue", ref)
    return {
        "ref": ref,
        "summary": summary,
        "tab": tab,
        "cells": presenters.count_cells(base_url, summary.counts),
        "chart": charts.queue_chart_for(summary, workers) if chart else "",
    }


def redirect_back(request: HttpRequest, fallback: str) -> HttpResponse:
    """Back to the page a form came from (its ``next`` field, when it is on
    this site), else to ``fallback``."""
    target = request.POST.get("next", "")
    safe = url_has_allowed_host_and_scheme(
        target, allowed_hosts={request.get_host()}, require_https=request.is_secure()
    )
    return redirect(target if target and safe else fallback)
