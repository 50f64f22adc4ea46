"""The JSON API's changes to jobs: edit a job's data, duplicate a job, add a
job. Same rules as the pages (``dashboard.acting.job_edits``), same errors as the
rest of the API (``{"error": {"code", "message"}}``), and the CSRF token on
every POST; they need ``dashboard.change_jobs``.

In a JSON body ``data`` (and ``opts``) are JSON values; in a form body they
are JSON text, as the pages' editors send them.
"""

from __future__ import annotations

from typing import Any

from django.http import HttpRequest, HttpResponse
from django.views.decorators.http import require_POST
from msgspec import UNSET

from dashboard.acting import job_edits
from dashboard.core.jsonresponse import JsonResponse
from dashboard.core.lookup import clean_job_ids, queue_or_404
from dashboard.core.permissions import api_permission, user_label
from dashboard.core.redis import get_client
from dashboard.shared import bodies
from dashboard.shared.web import BadInput, json_errors, request_body


def _value(request: HttpRequest, value: Any) -> Any:
    """A JSON value of the body: itself in JSON, parsed from its text in a form."""
    return value if request.content_type == "application/json" else job_edits.parse_data(value)


def _job_id(text: str) -> str:
    (job_id,) = clean_job_ids([text])
    return job_id


@require_POST
@api_permission(change=True)
@json_errors
def edit_job_data(request: HttpRequest, prefix: str, name: str) -> HttpResponse:
    """``{"id": "42", "data": {...}}``: replace a waiting, prioritized,
    delayed or failed job's data."""
    client = get_client()
    ref = queue_or_404(client, prefix, name)
    body = request_body(request, bodies.EditDataRequest)
    job_id = _job_id(body.id)
    if body.data is UNSET:
        raise BadInput("data is required")
    data = _value(request, body.data)
    change = job_edits.edit_data(client, ref, job_id, data, user=user_label(request.user))
    return JsonResponse(change.as_json())


@require_POST
@api_permission(change=True)
@json_errors
def duplicate_job(request: HttpRequest, prefix: str, name: str) -> HttpResponse:
    """``{"id": "42"}``: a new job with that job's name, data and options."""
    client = get_client()
    ref = queue_or_404(client, prefix, name)
    job_id = _job_id(request_body(request, bodies.DuplicateJobRequest).id)
    change = job_edits.duplicate_job(client, ref, job_id, user=user_label(request.user))
    return JsonResponse(change.as_json(), status=201)


@require_POST
@api_permission(change=True)
@json_errors
def add_job(request: HttpRequest, prefix: str, name: str) -> HttpResponse:
    """``{"name": "send", "data": {...}, "opts": {"delay": 5000}}``"""
    client = get_client()
    ref = queue_or_404(client, prefix, name)
    body = request_body(request, bodies.AddJobRequest)
    data = None if body.data is UNSET else _value(request, body.data)
    opts = None if body.opts is UNSET else _value(request, body.opts)
    change = job_edits.add_job(
        client,
        ref,
        body.name,
        {} if data is None else data,
        opts,
        user=user_label(request.user),
    )
    return JsonResponse(change.as_json(), status=201)
