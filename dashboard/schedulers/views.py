"""A queue's job schedulers: the "schedulers" tab of the queue page and its
JSON API (list, run now, remove).

The list comes from the read model (queues.read.schedulers), one page at a
time; the actions run through dashboard.acting.actions (one script each, audited),
so the page's buttons and the API say the same thing. The tab's table rides
on the queue page's live refresh (static/dashboard/live.js, #job-table): when
a scheduler's run is added, taken or finished, the queue's events make the
page refetch its fragment, so next runs and iteration counts stay current.
"""

from __future__ import annotations

import time
from typing import Any

from django.contrib import messages
from django.http import HttpRequest, HttpResponse
from django.views.decorators.http import require_GET, require_POST
from django.views.decorators.vary import vary_on_headers

from dashboard.acting import actions
from dashboard.core import answers
from dashboard.core.jsonresponse import JsonResponse
from dashboard.core.lookup import int_param, queue_or_404
from dashboard.core.permissions import api_permission, can_act, page_permission, user_label
from dashboard.core.queue_urls import queue_url
from dashboard.core.redis import get_client
from dashboard.schedulers import rows as scheduler_rows
from dashboard.shared import bodies
from dashboard.shared.web import (
    PAGE_SIZES,
    BadInput,
    is_htmx,
    json_errors,
    queue_context,
    redirect_back,
    render_page,
    request_body,
)
from queues.read import counts
from queues.read import schedulers as read
from queues.read.refs import QueueRef

TAB = "schedulers"


def _page_params(request: HttpRequest) -> tuple[int, int]:
    size = int_param(request.GET.get("size"), 50)
    size = size if size in PAGE_SIZES else 50
    return int_param(request.GET.get("page"), 1, lowest=1), size


@require_GET
@vary_on_headers("HX-Request")
@page_permission()
def page(request: HttpRequest, prefix: str, name: str) -> HttpResponse:
    client = get_client()
    ref = queue_or_404(client, prefix, name)
    page_number, size = _page_params(request)
    listed = read.scheduler_page(client, ref, start=(page_number - 1) * size, size=size)
    (summary,) = counts.queue_summaries(client, [ref], metrics_points=0)
    context: dict[str, Any] = queue_context(ref, summary, TAB, chart=not is_htmx(request))
    now_ms = int(time.time() * 1000)
    context.update(
        listed=listed,
        rows_html=scheduler_rows.rows_html(listed, can_act=can_act(request.user), now_ms=now_ms),
        page_number=page_number,
        page_sizes=PAGE_SIZES,
        size=size,
        scheduler_actions=answers.SCHEDULER_ACTIONS,
        fragment=is_htmx(request),
    )
    if is_htmx(request):
        return render_page(request, "dashboard/schedulers/_scheduler_table.html", context)
    return render_page(request, "dashboard/schedulers/schedulers.html", context)


@require_POST
@page_permission(act=True)
def page_action(request: HttpRequest, prefix: str, name: str) -> HttpResponse:
    client = get_client()
    ref = queue_or_404(client, prefix, name)
    fallback = _schedulers_url(ref)
    try:
        result = actions.scheduler_action(
            client,
            ref,
            request.POST.get("action", ""),
            request.POST.get("id", ""),
            user=user_label(request.user),
        )
    except actions.ActionRefused as error:
        messages.error(request, str(error))
        return redirect_back(request, fallback)
    level = messages.SUCCESS if result.ok else messages.WARNING
    messages.add_message(request, level, result.message)
    return redirect_back(request, fallback)


def _schedulers_url(ref: QueueRef) -> str:
    return queue_url("dashboard:schedulers", ref)


@require_GET
@api_permission()
@json_errors
def api_list(request: HttpRequest, prefix: str, name: str) -> HttpResponse:
    """``?start=0&end=49`` (inclusive end, like the jobs list)."""
    client = get_client()
    ref = queue_or_404(client, prefix, name)
    start = int_param(request.GET.get("start"), 0)
    end = int_param(request.GET.get("end"), start + 49)
    if end < start:
        raise BadInput("end must not be before start")
    size = min(end - start + 1, read.MAX_PAGE_SIZE)
    return JsonResponse(read.scheduler_page(client, ref, start=start, size=size).as_json())


@require_POST
@api_permission(act=True)
@json_errors
def api_action(request: HttpRequest, prefix: str, name: str) -> HttpResponse:
    """``{"action": "run_now" | "remove", "id": "<scheduler id>"}``"""
    client = get_client()
    ref = queue_or_404(client, prefix, name)
    body = request_body(request, bodies.SchedulerActionRequest)
    result = actions.scheduler_action(
        client, ref, body.action, body.id, user=user_label(request.user)
    )
    if result.status != 200:
        refused = result.answer(answers.SchedulerActionRefused, error=result.error)
        return JsonResponse(refused, status=result.status)
    return JsonResponse(result.answer(answers.SchedulerActionResult))
