"""The JSON API under /api/: the pages' data and actions, same permissions.

Errors are ``{"error": {"code", "message"}}``: 400 bad input, 401 not logged
in, 403 no permission (or read-only), 404 unknown queue or job, 409 a job not
in the state the action starts from (or a queue key of the wrong type,
``corrupt_key``), 507 Redis out of memory (``redis_out_of_memory``). POSTs
take JSON or form bodies and need the CSRF token (header ``X-CSRFToken``) like
every POST of the site.
"""

from __future__ import annotations

from django.http import Http404, HttpRequest, HttpResponse
from django.views.decorators.http import require_GET, require_POST
from msgspec import UNSET

from dashboard.acting import actions
from dashboard.core import answers as dashboard_answers
from dashboard.core.jsonresponse import JsonResponse
from dashboard.core.lookup import (
    clean_job_ids,
    int_param,
    job_id_or_404,
    no_queue,
    queue_or_404,
    queue_to_read,
)
from dashboard.core.permissions import api_permission, user_label
from dashboard.core.redis import get_client
from dashboard.shared import bodies
from dashboard.shared.bodies import MAX_MILLISECONDS
from dashboard.shared.connection_groups import queue_groups
from dashboard.shared.web import BadInput, json_errors, request_body, whole_number
from queues.read import answers, counts
from queues.read.answers import MAX_RANGE
from queues.read.events import event_json, events_page, job_events
from queues.read.job import job_detail
from queues.read.lists import job_page, job_page_if_exists
from queues.read.states import STATES


# A hundred years: ages beyond it are typos, and they must stay exact in Lua's doubles.
def _milliseconds(value: int | str | None, name: str) -> int | None:
    """A whole number of milliseconds, 0 up to a century: a JSON integer or a
    string of digits (a form field); None when not given."""
    if value is None or value == "":
        return None
    must = f"{name} must be an integer (milliseconds)"
    within = f"{name} must be between 0 and {MAX_MILLISECONDS:,} (milliseconds)"
    return whole_number(value, 0, MAX_MILLISECONDS, must=must, within=within)


@require_GET
@api_permission()
@json_errors
def queues(request: HttpRequest) -> HttpResponse:
    """Every queue of every connection; ``connections`` says which answered."""
    groups = queue_groups()
    return JsonResponse(
        answers.QueueList(
            queues=[s.as_json() for group in groups for s in group.summaries],
            connections=[group.as_json() for group in groups],
        )
    )


@require_GET
@api_permission()
@json_errors
def queue(request: HttpRequest, prefix: str, name: str) -> HttpResponse:
    client = get_client()
    ref = queue_or_404(client, prefix, name)
    (summary,) = counts.queue_summaries(client, [ref])
    return JsonResponse(summary.as_json())


def _page_window(request: HttpRequest) -> tuple[str, int, int]:
    """The state, first row and size a job list asks for."""
    state = request.GET.get("state", "wait")
    if state not in STATES:
        raise BadInput(f"state must be one of {', '.join(STATES)}")
    start = int_param(request.GET.get("start"), 0)
    end = int_param(request.GET.get("end"), start + 49)
    if end < start:
        raise BadInput("end must not be before start")
    return state, start, min(end - start + 1, MAX_RANGE)


@require_GET
@api_permission()
@json_errors
def jobs(request: HttpRequest, prefix: str, name: str) -> HttpResponse:
    """``?state=failed&start=0&end=49`` (inclusive end, like LRANGE).

    Whether the queue exists is asked with the page's first read, not before
    it (queue_to_read): the bench's most asked answer, one round trip less."""
    client = get_client()
    ref, if_it_exists = queue_to_read(prefix, name)
    try:
        state, start, size = _page_window(request)
    except BadInput:
        queue_or_404(client, prefix, name)  # an unknown queue is a 404 before bad input
        raise
    read = job_page_if_exists if if_it_exists else job_page
    page = read(client, ref, state, start=start, size=size)
    if page is None:
        raise no_queue(ref)
    return JsonResponse(page.as_json())


@require_GET
@api_permission()
@json_errors
def job(request: HttpRequest, prefix: str, name: str, job_id: str) -> HttpResponse:
    client = get_client()
    ref = queue_or_404(client, prefix, name)
    job_id = job_id_or_404(job_id)
    detail = job_detail(
        client,
        ref,
        job_id,
        logs_start=int_param(request.GET.get("logs_start"), 0),
        logs_size=min(int_param(request.GET.get("logs_size"), 50, lowest=1), MAX_RANGE),
        full_data=request.GET.get("full") == "1",
    )
    if detail is None:
        raise Http404(f"No job {job_id} in {ref.qualified}")
    return JsonResponse(
        detail.as_json([event_json(e) for e in job_events(client, ref, job_id, size=30)])
    )


@require_GET
@api_permission()
@json_errors
def events(request: HttpRequest, prefix: str, name: str) -> HttpResponse:
    client = get_client()
    ref = queue_or_404(client, prefix, name)
    page = events_page(
        client,
        ref,
        before=request.GET.get("before") or None,
        size=min(int_param(request.GET.get("count"), 50, lowest=1), MAX_RANGE),
        event_type=request.GET.get("type") or None,
        job_id=request.GET.get("job") or None,
    )
    return JsonResponse(page.as_json())


@require_POST
@api_permission(act=True)
@json_errors
def job_actions(request: HttpRequest, prefix: str, name: str) -> HttpResponse:
    """``{"action": "retry", "ids": ["1", "2"], "state": "failed", "reason": "..."}``"""
    client = get_client()
    ref = queue_or_404(client, prefix, name)
    body = request_body(request, bodies.JobActionRequest)
    raw_ids = body.id if body.ids is UNSET else body.ids
    if isinstance(raw_ids, str):
        raw_ids = [raw_ids]
    if not isinstance(raw_ids, list) or not all(isinstance(i, str) for i in raw_ids):
        raise BadInput("ids must be a list of job ids")
    result = actions.job_action(
        client,
        ref,
        body.action,
        clean_job_ids(raw_ids),
        user=user_label(request.user),
        state=body.state,
        reason=body.reason[:1000],
    )
    if result.status != 200:
        # Nothing moved: the error names why, the per-id results stay alongside.
        refused = result.answer(dashboard_answers.ActionRefused, error=result.error)
        return JsonResponse(refused, status=result.status)
    return JsonResponse(result.answer(dashboard_answers.ActionResult))


@require_POST
@api_permission(act=True)
@json_errors
def queue_actions(request: HttpRequest, prefix: str, name: str) -> HttpResponse:
    """``{"action": "retry_all" | "promote_all" | "clean" | "pause" | "resume", ...}``"""
    client = get_client()
    ref = queue_or_404(client, prefix, name)
    body = request_body(request, bodies.QueueActionRequest)
    grace_ms = _milliseconds(body.grace_ms, "grace_ms")
    result = actions.queue_action(
        client,
        ref,
        body.action,
        user=user_label(request.user),
        state=body.state,
        grace_ms=-1 if grace_ms is None else grace_ms,
    )
    return JsonResponse(result.answer(dashboard_answers.ActionResult))
