"""Changing a job: edit its data, duplicate it (both from the job page), add
one (the queue page), as the pages' forms and as the API. Each runs through
``dashboard.acting.job_edits``; a form comes back to a page with a message
saying what happened, or why nothing did. They need ``dashboard.change_jobs``.
In a JSON body ``data`` (and ``opts``) are JSON values; in a form, JSON text."""

from __future__ import annotations

from collections.abc import Callable
from functools import partial
from typing import Any

from django.contrib import messages
from django.http import HttpRequest, HttpResponse, QueryDict
from django.shortcuts import redirect
from msgspec import UNSET
from redis import Redis

from dashboard.acting import job_edits
from dashboard.acting.actions import ActionRefused
from dashboard.core.answers import JobChange
from dashboard.core.operations import CHANGE_ERRORS
from dashboard.core.permissions import user_label
from dashboard.core.queue_urls import queue_url
from dashboard.shared import bodies
from dashboard.shared.web import BadInput, api_view, page_view
from queues.keys import InvalidName, validate_job_id
from queues.numerals import NotWholeNumber, parse_whole
from queues.read.refs import QueueRef


def _posted_change(
    request: HttpRequest, ref: QueueRef, undone: str, change: Callable[..., JobChange]
) -> HttpResponse:
    """A form on the job page that changes the posted job: ``change(job id,
    user=...)`` makes the change (or raises why not), a message says what
    happened, and the page shown next is the changed job's (the copy, for a
    duplicate), or the job's own when nothing was done. ``undone`` words what
    did not happen when the id is no job id."""
    try:
        job_id = validate_job_id(request.POST.get("id", "").strip())
    except InvalidName:
        messages.error(request, f"That is not a job id: nothing was {undone}")
        return redirect(queue_url("dashboard:queue", ref))
    try:
        done = change(job_id, user=user_label(request.user))
    except ActionRefused as error:
        messages.error(request, str(error))
        return redirect(queue_url("dashboard:job", ref, job_id))
    messages.success(request, done.message)
    return redirect(queue_url("dashboard:job", ref, done.id))


@page_view("POST", change=True)
def edit_job_data(request: HttpRequest, client: Redis, ref: QueueRef) -> HttpResponse:
    def edit(job_id: str, *, user: str) -> JobChange:
        data = job_edits.parse_data(request.POST.get("data", ""))
        return job_edits.edit_data(client, ref, job_id, data, user=user)

    return _posted_change(request, ref, "changed", edit)


@page_view("POST", change=True)
def duplicate_job(request: HttpRequest, client: Redis, ref: QueueRef) -> HttpResponse:
    return _posted_change(request, ref, "duplicated", partial(job_edits.duplicate_job, client, ref))


def _form_options(form: QueryDict) -> dict[str, Any]:
    """The add form's options: empty fields are left to the job's defaults."""
    options = {}
    for name in job_edits.WHOLE_OPTIONS:
        text = (form.get(name) or "").strip()
        try:
            if text:
                options[name] = parse_whole(text)
        except NotWholeNumber:
            raise ActionRefused(f"{name} must be a whole number") from None
    return options


@page_view("POST", change=True)
def add_job(request: HttpRequest, client: Redis, ref: QueueRef) -> HttpResponse:
    try:
        data = job_edits.parse_data(request.POST.get("data", "") or "{}")
        change = job_edits.add_job(
            client,
            ref,
            request.POST.get("name", ""),
            data,
            _form_options(request.POST),
            user=user_label(request.user),
        )
    except ActionRefused as error:
        messages.error(request, f"No job was added: {error}")
        return redirect(queue_url("dashboard:queue", ref))
    messages.success(request, change.message)
    return redirect(queue_url("dashboard:job", ref, change.id))


# --------------------------------------------------------------------------- JSON


def _value(request: HttpRequest, value: Any) -> Any:
    """A JSON value of the body: itself in JSON, parsed from its text in a form."""
    return value if request.content_type == "application/json" else job_edits.parse_data(value)


# The decorator of a change to a job: its operation, ``dashboard.change_jobs``.
_change = partial(
    api_view,
    tags=["changes"],
    answer=("Done", JobChange),
    errors=CHANGE_ERRORS,
    change=True,
    description="Needs `dashboard.change_jobs`; audited with a before/after diff.",
)


@_change(
    "editJobData",
    body=bodies.EditDataRequest,
    example={"id": "42", "data": {"to": "ops@example.com"}},
    status="200",
)
def api_edit_job_data(
    request: HttpRequest, client: Redis, ref: QueueRef, body: bodies.EditDataRequest
) -> JobChange:
    """Replace the data of a waiting, prioritized, delayed or failed job"""
    job_id = validate_job_id(body.id.strip())
    if body.data is UNSET:
        raise BadInput("data is required")
    data = _value(request, body.data)
    return job_edits.edit_data(client, ref, job_id, data, user=user_label(request.user))


@_change("duplicateJob", body=bodies.DuplicateJobRequest, example={"id": "42"}, status="201")
def api_duplicate_job(
    request: HttpRequest, client: Redis, ref: QueueRef, body: bodies.DuplicateJobRequest
) -> JobChange:
    """Add a new job with a job's name, data and options"""
    job_id = validate_job_id(body.id.strip())
    return job_edits.duplicate_job(client, ref, job_id, user=user_label(request.user))


@_change(
    "addJob",
    body=bodies.AddJobRequest,
    example={"name": "send", "data": {"to": "ops@example.com"}, "opts": {"delay": 5000}},
    status="201",
)
def api_add_job(
    request: HttpRequest, client: Redis, ref: QueueRef, body: bodies.AddJobRequest
) -> JobChange:
    """Add a job: name, data and options"""
    data = None if body.data is UNSET else _value(request, body.data)
    opts = None if body.opts is UNSET else _value(request, body.opts)
    data = {} if data is None else data
    return job_edits.add_job(client, ref, body.name, data, opts, user=user_label(request.user))
