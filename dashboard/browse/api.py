"""The JSON API of the pages of browse/: the queues, a queue, its jobs and
events, and the actions on them; each view declares its OpenAPI operation
(shared.web.api_view), whose errors the document lists."""

from __future__ import annotations

from django.http import Http404, HttpRequest, HttpResponse
from msgspec import UNSET
from redis import Redis

from dashboard.acting import actions
from dashboard.core import answers as dashboard_answers
from dashboard.core.answers import ActionResult
from dashboard.core.lookup import (
    clean_job_ids,
    int_param,
    job_id_or_404,
    no_queue,
    queue_or_404,
    queue_to_read,
)
from dashboard.core.operations import (
    ACT_ERRORS,
    GARBAGE,
    READ_ERRORS,
    VIEW_ERRORS,
    parameter,
    query_param,
    size_param,
    start_param,
)
from dashboard.core.permissions import user_label
from dashboard.core.redis import get_client
from dashboard.shared import bodies
from dashboard.shared.bodies import MAX_MILLISECONDS
from dashboard.shared.connection_groups import queue_groups
from dashboard.shared.web import BadInput, api_view, whole_number
from queues.read import answers, counts
from queues.read.answers import MAX_RANGE, Count, State
from queues.read.events import event_json, events_page, job_events
from queues.read.job import job_detail
from queues.read.lists import job_page, job_page_if_exists
from queues.read.refs import QueueRef
from queues.read.states import STATES


@api_view(
    "listQueues",
    ["queues"],
    ("The queues", answers.QueueList),
    (*VIEW_ERRORS, "RedisUnavailable"),
    queue=False,
)
def queues(request: HttpRequest) -> answers.QueueList:
    """Every queue the dashboard shows, with counts and metrics"""
    # connections says which connections answered.
    groups = queue_groups()
    return answers.QueueList(
        queues=[s.as_json() for group in groups for s in group.summaries],
        connections=[group.as_json() for group in groups],
    )


@api_view("getQueue", ["queues"], ("The queue", answers.QueueSummary), READ_ERRORS)
def queue(request: HttpRequest, client: Redis, ref: QueueRef) -> answers.QueueSummary:
    """One queue, shaped like an entry of the list"""
    (summary,) = counts.queue_summaries(client, [ref])
    return summary.as_json()


@api_view(
    "listJobs",
    ["jobs"],
    ("The page", answers.JobPage),
    ("BadRequest", *READ_ERRORS),
    parameters=(
        query_param("state", "The state listed", State, default="wait"),
        start_param("job"),
        query_param(
            "end",
            f"Position of the last job, inclusive (default `start` + 49; at most {MAX_RANGE} "
            "jobs a page)" + GARBAGE,
            Count,
        ),
    ),
    queue=False,
)
def jobs(request: HttpRequest, prefix: str, name: str) -> answers.JobPage:
    """One page of the jobs in a state, newest first"""
    # Whether the queue exists is asked with the page's first read, not before
    # it (queue_to_read): the bench's most asked answer, one round trip less.
    client = get_client()
    ref, if_it_exists = queue_to_read(prefix, name)
    state = request.GET.get("state", "wait")
    start = int_param(request.GET.get("start"), 0)
    end = int_param(request.GET.get("end"), start + 49)
    if state not in STATES or end < start:
        queue_or_404(client, prefix, name)  # an unknown queue is a 404 before bad input
        wrong = f"state must be one of {', '.join(STATES)}"
        raise BadInput(wrong if state not in STATES else "end must not be before start")
    read = job_page_if_exists if if_it_exists else job_page
    page = read(client, ref, state, start=start, size=min(end - start + 1, MAX_RANGE))
    if page is None:
        raise no_queue(ref)
    return page.as_json()


@api_view(
    "getJob",
    ["jobs"],
    ("The job", answers.JobDetail),
    READ_ERRORS,
    parameters=(
        query_param("logs_start", "First log line" + GARBAGE, Count, default=0),
        size_param("logs_size", "Log lines", 50),
        parameter(
            "query", "full", "`1`: the whole data, however large", {"type": "string", "enum": ["1"]}
        ),
    ),
)
def job(request: HttpRequest, client: Redis, ref: QueueRef, job_id: str) -> answers.JobDetail:
    """Everything about one job: data, options, attempts, logs, family, events"""
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
    return detail.as_json([event_json(e) for e in job_events(client, ref, job_id, size=30)])


@api_view(
    "listEvents",
    ["events"],
    ("The page", answers.EventPage),
    ("BadRequest", *READ_ERRORS),
    parameters=(
        parameter(
            "query",
            "before",
            "Only events older than this stream id (`next_before` of the previous page)",
            {"type": "string", "pattern": "^[0-9]+(-[0-9]+)?$"},
        ),
        query_param("type", "Only events of this type (e.g. `failed`)", str),
        query_param("job", "Only this job's events", str),
        size_param("count", "Events a page", 50),
    ),
)
def events(request: HttpRequest, client: Redis, ref: QueueRef) -> answers.EventPage:
    """The queue's events, newest first"""
    page = events_page(
        client,
        ref,
        before=request.GET.get("before") or None,
        size=min(int_param(request.GET.get("count"), 50, lowest=1), MAX_RANGE),
        event_type=request.GET.get("type") or None,
        job_id=request.GET.get("job") or None,
    )
    return page.as_json()


@api_view(
    "actOnJobs",
    ["actions"],
    ("Done (for some ids at least)", ActionResult),
    (*ACT_ERRORS, "JobNotFound", "JobRefused"),
    body=bodies.JobActionRequest,
    example={"action": "retry", "ids": ["42"], "state": "failed"},
)
def job_actions(
    request: HttpRequest, client: Redis, ref: QueueRef, body: bodies.JobActionRequest
) -> HttpResponse | ActionResult:
    """Retry, promote, fail or remove jobs by id

    Each job moves by itself; the answer is 200 when any moved, with one result
    per id. When none moved, the status and `error` are the first refusal's, the
    results beside them.
    """
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
    return result.api_answer(ActionResult, dashboard_answers.ActionRefused)


@api_view(
    "actOnQueue",
    ["actions"],
    ("Done", ActionResult),
    (*ACT_ERRORS, "NotFound", "CorruptKey"),
    body=bodies.QueueActionRequest,
    example={"action": "clean", "state": "completed", "grace_ms": 3600000},
)
def queue_actions(
    request: HttpRequest, client: Redis, ref: QueueRef, body: bodies.QueueActionRequest
) -> ActionResult:
    """Retry all, promote all, clean, pause or resume a queue

    Bulk moves run in bounded batches; jobs whose keys are broken stay where
    they are and are listed in `skipped`.
    """
    # 0 up to a century (MAX_MILLISECONDS): more is a typo, and must stay exact in Lua's doubles.
    grace_ms = -1  # not given
    if body.grace_ms not in (None, ""):
        must = "grace_ms must be an integer (milliseconds)"
        within = f"grace_ms must be between 0 and {MAX_MILLISECONDS:,} (milliseconds)"
        grace_ms = whole_number(body.grace_ms, 0, MAX_MILLISECONDS, must=must, within=within)
    result = actions.queue_action(
        client, ref, body.action, user=user_label(request.user), state=body.state, grace_ms=grace_ms
    )
    return result.answer(ActionResult)
