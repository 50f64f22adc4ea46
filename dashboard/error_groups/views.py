"""The failed tab grouped by error: the page, its JSON API and the group
actions. The groups' index (queues.read.error_groups) is caught up on each
look, so a look costs what changed since the last; a group's retry or remove
runs each job's own script (acting.actions.act_on_ids) and the index forgets
the moved jobs at once.
"""

from __future__ import annotations

import re
from typing import Any

from django.http import Http404, HttpRequest, HttpResponse
from redis import Redis

from dashboard.acting import actions
from dashboard.core import answers as dashboard_answers
from dashboard.core.answers import GROUP_ACTIONS, LISTED_REFUSALS
from dashboard.core.lookup import int_param
from dashboard.core.operations import ACT_ERRORS, READ_ERRORS, size_param, start_param
from dashboard.core.permissions import user_label
from dashboard.shared import bodies, presenters
from dashboard.shared.web import (
    PAGE_SIZES,
    api_view,
    form_view,
    is_htmx,
    page_params,
    page_view,
    queue_context,
    render_page,
)
from queues import errors
from queues.read import answers, counts, lists
from queues.read import error_groups as read
from queues.read.refs import QueueRef

TAB = "failed"
# One click moves at most this many jobs of a group (the rest: click again),
# so one request holds a bounded list of ids.
MAX_GROUP_ACTION_JOBS = actions.MAX_IDS_PER_SET
_GROUP_KEY = re.compile(rf"[0-9a-f]{{16}}\Z|{read.OTHER}\Z")


def clean_group_key(raw: Any, unknown: Exception | None = None) -> str:
    """``raw`` if it can name a group; else ``unknown`` (a refusal by default) is raised."""
    if not isinstance(raw, str) or not _GROUP_KEY.match(raw):
        raise unknown or actions.ActionRefused("Unknown error group")
    return raw


def caught_up(client: Redis, ref: QueueRef) -> read.ErrorGroups:
    """The queue's groups as of now; a broken key of it refused (409) by name."""
    try:
        return read.error_groups(client, ref)
    except errors.CorruptKey as error:
        raise actions.QueueKeyCorrupt(str(error)) from error


def group_page(
    client: Redis, ref: QueueRef, group: str, start: int, size: int, total: int
) -> lists.JobPage:
    """A page of the group's ``total`` jobs, newest failure first."""
    ids = read.group_job_ids(client, ref, group, start=start, size=size) if total else []
    return lists.JobPage(ref, TAB, start, size, total, lists.job_rows(client, ref.keys, TAB, ids))


# -- acting on a group --------------------------------------------------------------


def group_action(
    client: Redis, ref: QueueRef, group: str, action: str, *, user: str
) -> dashboard_answers.ErrorGroupActionResult:
    """Retry or remove every failed job of an error group (up to
    ``MAX_GROUP_ACTION_JOBS`` per call), each through its own script
    (dashboard.acting.actions.act_on_ids: a job that moved meanwhile is skipped and
    counted, a broken one named)."""
    if action not in GROUP_ACTIONS:
        raise actions.ActionRefused(f"Unknown action {action!r}: retry or remove a group")
    group = clean_group_key(group)
    try:
        read.error_groups(client, ref)  # caught up: the ids are the group's as of now
        total = read.group_count(client, ref, group)
        size = min(total, MAX_GROUP_ACTION_JOBS)
        ids = read.group_job_ids(client, ref, group, start=0, size=size)
        if not ids:
            raise actions.ActionRefused("This error group has no failed jobs any more")
        result = actions.act_on_ids(client, ref, action, ids, user=user, state=TAB)
        # Out of the index now, rather than when the next look reads their events.
        read.forget_jobs(client, ref, result.moved_ids)
    except errors.CorruptKey as error:
        raise actions.QueueKeyCorrupt(str(error)) from error
    broken = [job.job_id for job in result.skipped]
    left = max(0, total - len(ids))  # jobs of the group beyond this click's share
    result.message = _message(action, result, len(ids), broken, left)
    return result.answer(
        dashboard_answers.ErrorGroupActionResult,
        results=result.outcomes[:LISTED_REFUSALS],
        group=group,
        asked=len(ids),
        moved_meanwhile=result.moved_meanwhile,
        broken=broken[:LISTED_REFUSALS],
        left=left,
    )


def _message(
    action: str, result: actions.ActionResult, asked: int, broken: list[str], left: int
) -> str:
    count, meanwhile = result.count, result.moved_meanwhile
    parts = [f"{count:,} failed job{'' if count == 1 else 's'} of the group {actions.PAST[action]}"]
    if meanwhile:
        parts.append(f"{meanwhile:,} had moved meanwhile and were left alone")
    if broken:
        named = ", ".join(broken[:3])
        more = f" and {len(broken) - 3:,} more" if len(broken) > 3 else ""
        parts.append(f"{len(broken):,} broken, left in failed: {named}{more}")
    others = asked - count - meanwhile - len(broken)
    if others > 0:
        refusal = next((o.message for o in result.outcomes if not o.ok), "")
        parts.append(f"{others:,} not: {refusal}")
    if left:
        parts.append(f"{left:,} more in the group: run it again for them")
    return "; ".join(parts)


# -- the page ----------------------------------------------------------------------


@page_view(fragments=True)
def groups_page(request: HttpRequest, client: Redis, ref: QueueRef) -> HttpResponse:
    group = request.GET.get("group", "")
    (summary,) = counts.queue_summaries(client, [ref], metrics_points=0)
    try:
        grouped, corrupt = caught_up(client, ref), ""
        # The tab says the groups' total, read after the counts: set before the
        # tabs are built, or a failure between the two reads showed the tab at
        # 178 beside groups adding up to 180 (issue 21).
        summary.counts[TAB] = grouped.failed
    except actions.QueueKeyCorrupt as error:
        grouped, corrupt = read.ErrorGroups(ref, [], 0, 0, complete=True), str(error)
    context: dict[str, Any] = queue_context(ref, summary, TAB, chart=not is_htmx(request))
    context.update(fragment=is_htmx(request), corrupt=corrupt)
    context.update(grouped=grouped, group_actions=GROUP_ACTIONS)
    fragment = "_error_groups.html"
    if group:  # one group's jobs, a page at a time
        fragment = "_error_group_jobs.html"
        group = clean_group_key(group, Http404("No such error group"))
        page_number, size = page_params(request)
        shown = next((g for g in grouped.groups if g.key == group), None)
        start, total = (page_number - 1) * size, shown.count if shown else 0
        jobs = group_page(client, ref, group, start, size, total)
        rows_html = presenters.job_rows_html(jobs, selectable=False)
        context.update(group=shown, group_key=group, jobs=jobs, rows_html=rows_html)
        context.update(page_number=page_number, size=size, page_sizes=PAGE_SIZES)
    name = fragment if is_htmx(request) else "error_groups.html"
    return render_page(request, f"dashboard/error_groups/{name}", context)


@form_view("dashboard:error_groups", act=True)
def group_action_page(request: HttpRequest, client: Redis, ref: QueueRef) -> tuple[str, bool]:
    post = request.POST
    user = user_label(request.user)
    done = group_action(client, ref, post.get("group", ""), post.get("action", ""), user=user)
    clean = not (done.broken or done.moved_meanwhile or done.left)
    return done.message, bool(done.count and clean)


# -- the API -------------------------------------------------------------------------


@api_view(
    "listErrorGroups", ["jobs"], ("The groups", answers.ErrorGroups), (*READ_ERRORS, "CorruptKey")
)
def api_groups(request: HttpRequest, client: Redis, ref: QueueRef) -> answers.ErrorGroups:
    """The queue's failed jobs grouped by their folded reason, most first

    Kept in Redis by the dashboard and caught up on each call (the first call
    counts every failed job, in bounded batches).
    """
    return caught_up(client, ref).as_json()


@api_view(
    "listErrorGroupJobs",
    ["jobs"],
    ("The page", answers.ErrorGroupJobs),
    READ_ERRORS,
    parameters=(start_param("one"), size_param("size", "How many", 50)),
)
def api_group_jobs(
    request: HttpRequest, client: Redis, ref: QueueRef, group: str
) -> answers.ErrorGroupJobs:
    """One page of an error group's jobs, newest failure first"""
    group = clean_group_key(group, Http404(f"No error group {group[:40]!r} in {ref.qualified}"))
    start = int_param(request.GET.get("start"), 0)
    size = int_param(request.GET.get("size"), 50, lowest=1, highest=500)
    page = group_page(client, ref, group, start, size, read.group_count(client, ref, group))
    jobs = [row.as_json() for row in page.rows]
    return answers.ErrorGroupJobs(
        queue=ref.qualified, group=group, start=start, total=page.total, jobs=jobs
    )


@api_view(
    "actOnErrorGroup",
    ["actions"],
    ("Done", dashboard_answers.ErrorGroupActionResult),
    (*ACT_ERRORS, "NotFound", "CorruptKey"),
    body=bodies.ErrorGroupActionRequest,
    example={"action": "retry", "group": "0123456789abcdef"},
)
def api_group_action(
    request: HttpRequest, client: Redis, ref: QueueRef, body: bodies.ErrorGroupActionRequest
) -> dashboard_answers.ErrorGroupActionResult:
    """Retry or remove every failed job of an error group

    Each job through its own script, re-checked there: one that moved meanwhile
    is left alone and counted, a broken one is reported.
    """
    return group_action(client, ref, body.group, body.action, user=user_label(request.user))
