"""The web helpers every feature's views use: the decorators that give a view
its method, its permission and its queue (an API view also its body, JSON
errors and OpenAPI operation), the body readers, the page renderer, the htmx
check, the safe redirect back and what every tab of a queue shows above its
own part. One public module, so no view imports another's private names."""

from __future__ import annotations

import inspect
import re
from collections.abc import Callable
from functools import cache, wraps
from typing import Any, TypeVar, cast

import msgspec
from django.contrib import messages
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.utils.http import url_has_allowed_host_and_scheme
from django.views.decorators.http import require_http_methods
from django.views.decorators.vary import vary_on_headers
from django_htmx.middleware import HtmxDetails
from redis import Redis

from dashboard.acting import actions
from dashboard.core import conf, json_input
from dashboard.core.errors import json_error
from dashboard.core.jsonresponse import JsonResponse
from dashboard.core.lookup import int_param, queue_or_404
from dashboard.core.operations import Operation
from dashboard.core.permissions import (
    api_permission,
    can_act,
    can_change,
    page_permission,
    read_only,
    read_only_note,
)
from dashboard.core.queue_urls import queue_url
from dashboard.core.redis import get_client
from dashboard.shared import bodies, charts
from dashboard.shared.health import Workers
from queues.keys import InvalidName
from queues.numerals import NotWholeNumber, parse_whole
from queues.read import counts
from queues.read.refs import QueueRef
from queues.read.states import TABS

V = TypeVar("V", bound=Callable[..., HttpResponse])
View = Callable[..., HttpResponse]
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


def page_params(request: HttpRequest) -> tuple[int, int]:
    """A list page's ``page`` (from 1) and ``size`` (one of PAGE_SIZES, else 50)."""
    size = int_param(request.GET.get("size"), 50)
    return int_param(request.GET.get("page"), 1, lowest=1), size if size in PAGE_SIZES else 50


def queue_of(prefix: str, name: str) -> tuple[Redis, QueueRef]:
    """The client of the view's connection and the queue a URL names (Http404 else)."""
    client = get_client()
    return client, queue_or_404(client, prefix, name)


def _with_queue(view: Callable[..., Any], body: type[msgspec.Struct] | None = None) -> View:
    """``view`` called with the client and the queue for the URL's prefix and
    name (dashboard.urls), then the POST's ``body`` when it has one."""

    @wraps(view)
    def wrapper(request: HttpRequest, *args: Any, prefix: str, name: str, **kwargs: Any) -> Any:
        found: tuple[Any, ...] = queue_of(prefix, name)
        if body is not None:
            found = (*found, request_body(request, cast(type[bodies.Body], body)))
        return view(request, *found, *args, **kwargs)

    return wrapper


def page_view(
    method: str = "GET",
    *,
    act: bool = False,
    change: bool = False,
    fragments: bool = False,
    queue: bool = True,
) -> Callable[[View], View]:
    """A page's view: its method and permission (the login page, a 403 page);
    ``fragments``: it answers htmx with a part of the page, so it varies on
    ``HX-Request`` (is_htmx); ``queue``: called with :func:`queue_of`'s two."""

    def decorate(view: View) -> View:
        guarded = page_permission(act=act, change=change)(_with_queue(view) if queue else view)
        if fragments:
            guarded = vary_on_headers("HX-Request")(guarded)
        return require_http_methods([method])(guarded)

    return decorate


def form_view(
    back: str | Callable[[HttpRequest, QueueRef], str], **permission: bool
) -> Callable[[Callable[..., tuple[str, bool]]], View]:
    """A queue page's form that acts (``permission``: page_view's): the view
    returns its message and whether all went well (else it is a warning), or
    raises why not; then back to the form's page, else to ``back``'s URL (or
    the URL it makes of the request, when it depends on what was posted)."""

    def decorate(view: Callable[..., tuple[str, bool]]) -> View:
        @wraps(view)
        def acted(request: HttpRequest, client: Redis, ref: QueueRef) -> HttpResponse:
            try:
                message, well = view(request, client, ref)
                level = messages.SUCCESS if well else messages.WARNING
            except (actions.ActionRefused, BadInput, InvalidName) as error:
                message, level = str(error), messages.ERROR
            messages.add_message(request, level, message)
            fallback = back(request, ref) if callable(back) else queue_url(back, ref)
            return redirect_back(request, fallback)

        return page_view("POST", **permission)(acted)

    return decorate


def api_view(
    operation_id: str,
    tags: list[str],
    answer: tuple[str, type[msgspec.Struct]],
    errors: tuple[str, ...],
    *,
    change: bool = False,
    queue: bool = True,
    **more: Any,
) -> Callable[[Callable[..., Any]], View]:
    """An API view and its operation in the OpenAPI document (core.operations,
    its summary and description the view's docstring): a GET, or a POST with a
    ``body``; its permission, errors as JSON (:func:`json_errors`); ``queue``:
    called with :func:`queue_of`'s two (and the body). The view answers a
    Struct (sent with the operation's status) or a response of its own."""

    def decorate(view: Callable[..., Any]) -> View:
        summary, _, rest = inspect.cleandoc(view.__doc__ or "").partition("\n")
        more.setdefault("description", " ".join(rest.split()))
        operation = Operation(operation_id, tags, answer, errors, summary=summary, **more)
        status = int(operation.status)

        @wraps(view)
        def answered(request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
            found = view(request, *args, **kwargs)
            return found if isinstance(found, HttpResponse) else JsonResponse(found, status=status)

        inner = _with_queue(answered, operation.body) if queue else answered
        guarded = api_permission(act=operation.body is not None, change=change)(json_errors(inner))
        wrapper = require_http_methods(["POST" if operation.body else "GET"])(guarded)
        wrapper.__dict__["operation"] = operation  # read by dashboard.openapi
        return wrapper

    return decorate


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
        elif isinstance(value, str) and _HALF_CHARACTER.search(value):
            raise BadInput(f"{name} is not valid Unicode text")
    try:
        return msgspec.convert(fields, shape)
    except msgspec.ValidationError as error:
        found = _FIELD.search(str(error))
        name = found.group(1) if found else "The body"
    except UnicodeEncodeError:  # msgspec's, for half a character where a list goes
        name = next(
            k for k, v in fields.items() if isinstance(v, str) and _HALF_CHARACTER.search(v)
        )
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
# Half a character, which JSON lets through ("\ud800") and UTF-8, all Redis takes, has not.
_HALF_CHARACTER = re.compile("[\ud800-\udfff]")


@cache
def _words(shape: type[bodies.Body]) -> dict[str, str]:
    """The text fields of ``shape`` (marked bodies.Words) and their defaults."""
    return {
        field.name: "" if field.required else field.default
        for field in msgspec.structs.fields(shape)
        if any(isinstance(mark, bodies.Words) for mark in getattr(field.type, "__metadata__", ()))
    }


def is_htmx(request: HttpRequest) -> bool:
    """An htmx swap, which wants only the fragment it replaces. Not a history
    restore (htmx 2 sends ``HX-Request`` on Back when its snapshot is gone):
    that gets the whole page. Views answering both ways vary on ``HX-Request``,
    so the browser's cache never hands a fragment to a plain navigation. Read
    from the headers, so a project need not install django-htmx's middleware."""
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
        # (tab, its count, its URL): the tabs' row (_queue_tabs.html).
        "cells": [(t, summary.counts[t.name], f"{base_url}?state={t.name}") for t in TABS],
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
