"""The JSON API's changes to jobs: edit a job's data, duplicate a job, add a
job. Same rules as the pages (``dashboard.shared.job_edits``), same errors as the
rest of the API (``{"error": {"code", "message"}}``), and the CSRF token on
every POST; they need ``dashboard.change_jobs``.

In a JSON body ``data`` (and ``opts``) are JSON values; in a form body they
are JSON text, as the pages' editors send them.
"""

from __future__ import annotations

from typing import Any

from django.http import HttpRequest, HttpResponse
from django.views.decorators.http import require_POST

from dashboard.core.jsonresponse import JsonResponse
from dashboard.core.lookup import clean_job_ids, queue_or_404
from dashboard.core.permissions import api_permission, user_label
from dashboard.core.redis import get_client
from dashboard.shared import job_edits
from dashboard.shared.web import BadInput, json_errors, request_body, text_field


def _is_form(request: HttpRequest) -> bool:
    return request.content_type != "application/json"


def _value(request: HttpRequest, body: dict[str, Any], name: str, *, required: bool) -> Any:
    """A JSON value of the body: itself in JSON, parsed from its text in a form."""
    if name not in body:
        if required:
            raise BadInput(f"{name} is required")
        return None
    if _is_form(request):
        return job_edits.parse_data(text_field(body, name))
    return body[name]


def _job_id(body: dict[str, Any]) -> str:
    (job_id,) = clean_job_ids([text_field(body, "id")])
    return job_id


@require_POST
@api_permission(change=True)
@json_errors
def edit_job_data(request: HttpRequest, prefix: str, name: str) -> HttpResponse:
    """``{"id": "42", "data": {...}}``: replace a waiting, prioritized,
    delayed or failed job's data."""
    client = get_client()
    ref = queue_or_404(client, prefix, name)
    body = request_body(request)
    job_id = _job_id(body)
    data = _value(request, body, "data", required=True)
    change = job_edits.edit_data(client, ref, job_id, data, user=user_label(request.user))
    return JsonResponse(change.as_json())


@require_POST
@api_permission(change=True)
@json_errors
def duplicate_job(request: HttpRequest, prefix: str, name: str) -> HttpResponse:
    """``{"id": "42"}``: a new job with that job's name, data and options."""
    client = get_client()
    ref = queue_or_404(client, prefix, name)
    job_id = _job_id(request_body(request))
    change = job_edits.duplicate_job(client, ref, job_id, user=user_label(request.user))
    return JsonResponse(change.as_json(), status=201)


@require_POST
@api_permission(change=True)
@json_errors
def add_job(request: HttpRequest, prefix: str, name: str) -> HttpResponse:
    """``{"name": "send", "data": {...}, "opts": {"delay": 5000}}``"""
    client = get_client()
    ref = queue_or_404(client, prefix, name)
    body = request_body(request)
    data = _value(request, body, "data", required=False)
    opts = _value(request, body, "opts", required=False)
    change = job_edits.add_job(
        client,
        ref,
        text_field(body, "name"),
        {} if data is None else data,
        opts,
        user=user_label(request.user),
    )
    return JsonResponse(change.as_json(), status=201)
