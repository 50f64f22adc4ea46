"""A queue's job schedulers: the "schedulers" tab and its JSON API (list,
run now, remove), the actions through dashboard.acting.actions so the buttons
and the API say the same. The table rides on the queue page's live refresh:
a scheduler's run added, taken or finished is an event of the queue.
"""

from __future__ import annotations

import time
from typing import Any

from django.http import HttpRequest, HttpResponse
from redis import Redis

from dashboard.acting import actions
from dashboard.core import answers
from dashboard.core.lookup import int_param
from dashboard.core.operations import ACT_ERRORS, GARBAGE, READ_ERRORS, query_param, start_param
from dashboard.core.permissions import can_act, user_label
from dashboard.schedulers import rows as scheduler_rows
from dashboard.shared import bodies
from dashboard.shared.web import (
    PAGE_SIZES,
    BadInput,
    api_view,
    form_view,
    is_htmx,
    page_params,
    page_view,
    queue_context,
    render_page,
)
from queues.read import answers as read_answers
from queues.read import counts
from queues.read import schedulers as read
from queues.read.answers import Count
from queues.read.refs import QueueRef

TAB = "schedulers"


@page_view(fragments=True)
def page(request: HttpRequest, client: Redis, ref: QueueRef) -> HttpResponse:
    page_number, size = page_params(request)
    listed = read.scheduler_page(client, ref, start=(page_number - 1) * size, size=size)
    (summary,) = counts.queue_summaries(client, [ref], metrics_points=0)
    fragment = is_htmx(request)
    context: dict[str, Any] = queue_context(ref, summary, TAB, chart=not fragment)
    rows_html = scheduler_rows.rows_html(
        listed, can_act=can_act(request.user), now_ms=int(time.time() * 1000)
    )
    context.update(
        listed=listed,
        rows_html=rows_html,
        page_number=page_number,
        page_sizes=PAGE_SIZES,
        size=size,
        scheduler_actions=answers.SCHEDULER_ACTIONS,
        fragment=fragment,
    )
    template = "_scheduler_table.html" if fragment else "schedulers.html"
    return render_page(request, f"dashboard/schedulers/{template}", context)


@form_view("dashboard:schedulers", act=True)
def page_action(request: HttpRequest, client: Redis, ref: QueueRef) -> tuple[str, bool]:
    post = request.POST
    done = actions.scheduler_action(
        client, ref, post.get("action", ""), post.get("id", ""), user=user_label(request.user)
    )
    return done.message, done.ok


@api_view(
    "listSchedulers",
    ["schedulers"],
    ("The page", read_answers.SchedulerPage),
    ("BadRequest", *READ_ERRORS),
    parameters=(
        start_param("one"),
        query_param(
            "end",
            "Position of the last one, inclusive (default `start` + 49; at most "
            f"{read.MAX_PAGE_SIZE} a page)" + GARBAGE,
            Count,
        ),
    ),
)
def api_list(request: HttpRequest, client: Redis, ref: QueueRef) -> read_answers.SchedulerPage:
    """One page of the queue's job schedulers and legacy repeatable jobs, soonest next run first

    A definition that is broken (fields missing or malformed, an unreadable
    pattern, a template that is not JSON) is listed with `notes` saying what is wrong.
    """
    start = int_param(request.GET.get("start"), 0)
    end = int_param(request.GET.get("end"), start + 49)
    if end < start:
        raise BadInput("end must not be before start")
    size = min(end - start + 1, read.MAX_PAGE_SIZE)
    return read.scheduler_page(client, ref, start=start, size=size).as_json()


@api_view(
    "actOnScheduler",
    ["actions", "schedulers"],
    ("Done", answers.SchedulerActionResult),
    (*ACT_ERRORS, "SchedulerNotFound", "SchedulerRefused"),
    body=bodies.SchedulerActionRequest,
    example={"action": "run_now", "id": "nightly"},
)
def api_action(
    request: HttpRequest, client: Redis, ref: QueueRef, body: bodies.SchedulerActionRequest
) -> HttpResponse | answers.SchedulerActionResult:
    """Run a job scheduler now, or remove it with its pending run

    `run_now` adds a job from the template, ready at once; the schedule stays as
    it was. `remove` deletes the scheduler and its pending run (unless a worker
    has taken it). One script each; nothing changes when refused.
    """
    result = actions.scheduler_action(
        client, ref, body.action, body.id, user=user_label(request.user)
    )
    return result.api_answer(answers.SchedulerActionResult, answers.SchedulerActionRefused)
