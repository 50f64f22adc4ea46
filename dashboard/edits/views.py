"""The pages' forms that change jobs: edit a job's data (job page), duplicate
a job (job page), add a job (queue page). Each posts here, runs through
``dashboard.acting.job_edits`` and comes back to a page with a message saying what
happened, or why nothing did. They need ``dashboard.change_jobs``."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from django.contrib import messages
from django.http import HttpRequest, HttpResponse, QueryDict
from django.shortcuts import redirect
from django.views.decorators.http import require_POST
from redis import Redis

from dashboard.acting import job_edits
from dashboard.acting.actions import ActionRefused
from dashboard.core.lookup import clean_job_ids, queue_or_404
from dashboard.core.permissions import page_permission, user_label
from dashboard.core.queue_urls import queue_url
from dashboard.core.redis import get_client
from queues.keys import InvalidName
from queues.numerals import NotWholeNumber, parse_whole
from queues.read.refs import QueueRef


def _job_url(ref: QueueRef, job_id: str) -> str:
    return queue_url("dashboard:job", ref, job_id)


def _queue_url(ref: QueueRef) -> str:
    return queue_url("dashboard:queue", ref)


def _posted_job_id(request: HttpRequest) -> str | None:
    try:
        (job_id,) = clean_job_ids([request.POST.get("id", "")])
    except (InvalidName, ValueError):
        return None
    return job_id


def _change_posted_job(
    request: HttpRequest,
    prefix: str,
    name: str,
    undone: str,
    change: Callable[[Redis, QueueRef, str, str], job_edits.JobChange],
) -> HttpResponse:
    """A form on the job page that changes the posted job: ``change(client,
    ref, job id, user)`` makes the change (or raises why not), a message says
    what happened, and the page shown next is the changed job's (the copy,
    for a duplicate), or the job's own when nothing was done. ``undone``
    words what did not happen when the id is no job id."""
    client = get_client()
    ref = queue_or_404(client, prefix, name)
    job_id = _posted_job_id(request)
    if job_id is None:
        messages.error(request, f"That is not a job id: nothing was {undone}")
        return redirect(_queue_url(ref))
    try:
        done = change(client, ref, job_id, user_label(request.user))
    except ActionRefused as error:
        messages.error(request, str(error))
        return redirect(_job_url(ref, job_id))
    messages.success(request, done.message)
    return redirect(_job_url(ref, done.job_id))


@require_POST
@page_permission(change=True)
def edit_job_data(request: HttpRequest, prefix: str, name: str) -> HttpResponse:
    def edit(client: Redis, ref: QueueRef, job_id: str, user: str) -> job_edits.JobChange:
        data = job_edits.parse_data(request.POST.get("data", ""))
        return job_edits.edit_data(client, ref, job_id, data, user=user)

    return _change_posted_job(request, prefix, name, "changed", edit)


@require_POST
@page_permission(change=True)
def duplicate_job(request: HttpRequest, prefix: str, name: str) -> HttpResponse:
    def duplicate(client: Redis, ref: QueueRef, job_id: str, user: str) -> job_edits.JobChange:
        return job_edits.duplicate_job(client, ref, job_id, user=user)

    return _change_posted_job(request, prefix, name, "duplicated", duplicate)


def _whole_number(form: QueryDict, name: str) -> int | None:
    text = (form.get(name) or "").strip()
    if not text:
        return None
    try:
        return parse_whole(text)
    except NotWholeNumber:
        raise job_edits.ChangeRefused(f"{name} must be a whole number") from None


def _form_options(form: QueryDict) -> dict[str, Any]:
    """The add form's options: empty fields are left to the job's defaults."""
    numbers = {name: _whole_number(form, name) for name in ("attempts", "delay", "priority")}
    return {name: value for name, value in numbers.items() if value is not None}


@require_POST
@page_permission(change=True)
def add_job(request: HttpRequest, prefix: str, name: str) -> HttpResponse:
    client = get_client()
    ref = queue_or_404(client, prefix, name)
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
        return redirect(_queue_url(ref))
    messages.success(request, change.message)
    return redirect(_job_url(ref, change.job_id))
