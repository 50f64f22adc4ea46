"""HTML pages. Thin: validate the URL, ask the read model, render; actions go
through ``dashboard.acting.actions``. One view serves its full page and, for htmx
requests, only the fragment that changed."""

from __future__ import annotations

import functools
import time
from collections.abc import Sequence
from dataclasses import dataclass
from urllib.parse import urlencode

from django.contrib import messages
from django.http import HttpRequest, HttpResponse, HttpResponseBadRequest
from django.shortcuts import redirect
from django.utils.safestring import SafeString
from redis import Redis

from dashboard.acting import actions, job_edits
from dashboard.browse.health_reads import queue_workers
from dashboard.core import connections
from dashboard.core.lookup import clean_job_ids, int_param, job_id_or_404
from dashboard.core.permissions import can_act, user_label
from dashboard.core.queue_urls import queue_url
from dashboard.flows import views as flows
from dashboard.shared import action_bars, connection_groups, presenters
from dashboard.shared.web import (
    PAGE_SIZES,
    form_view,
    is_htmx,
    page_params,
    page_view,
    queue_context,
    render_page,
)
from queues.keys import InvalidName
from queues.read import counts, events, lists, states
from queues.read.job import job_detail
from queues.read.refs import QueueRef

# The overview's rows per page: a screenful and more, and the most one live
# socket follows comfortably (dashboard.live.consumer.MAX_QUEUES_PER_SOCKET).
OVERVIEW_PAGE_SIZE = 100
# Longer than any queue's "prefix:name" worth typing: a filter past it is cut.
MAX_FILTER_CHARS = 200
LOGS_PAGE_SIZE = 50
# What the events tab hides by default, so that state changes (failures first)
# are not buried: "progress" moves no job and can come many times a second;
# "added" is always followed by the state the job entered, which shows;
# "duplicated" and "deduplicated" added nothing; "drained" follows from the
# moves shown. "waiting" stays: it is how a retry or a promotion shows.
QUIET_EVENTS = ("progress", "added", "duplicated", "deduplicated", "drained")


@dataclass(slots=True)
class OverviewPage(lists.PagePosition):
    """One page of the overview's queues, after the name filter and the sort."""

    start: int
    size: int
    total: int  # queues the filter lets through
    rows: Sequence[SafeString]
    known: int  # queues before the filter
    needle: str
    sort: str
    number: int

    def url(self, *, page: int = 1, sort: str | None = None) -> str:
        """The overview's query string for another page or sort, keeping the filter."""
        query = {"q": self.needle, "sort": sort or self.sort, "page": page}
        # Defaults stay out of the address: "?page=2", not "?q=&sort=name&page=2".
        return "?" + urlencode({k: v for k, v in query.items() if v not in ("", 1, "name")})

    # The pager's and the sort links' addresses.
    previous_url = property(lambda self: self.url(page=self.number - 1))
    next_url = property(lambda self: self.url(page=self.number + 1))
    name_sort_url = property(lambda self: self.url(sort="name"))
    failed_sort_url = property(lambda self: self.url(sort="failed"))


@page_view(fragments=True, queue=False)
def overview(request: HttpRequest) -> HttpResponse:
    """Every queue of every connection, a page of rows at a time: a thousand queues
    cost a page's worth of reads and HTML, plus one count per queue sorted by failures.
    With several connections the rows come grouped by connection (each in name or
    most-failed order), one whose Redis does not answer a heading saying so."""
    groups = connection_groups.discovered()
    needle = request.GET.get("q", "").strip()[:MAX_FILTER_CHARS]
    sort = "failed" if request.GET.get("sort") == "failed" else "name"
    listed: list[tuple[connection_groups.ConnectionGroup, QueueRef]] = []
    matching: dict[str, int] = {}
    folded = needle.casefold()
    for group in groups:
        refs = group.refs
        if needle:
            refs = [ref for ref in refs if folded in ref.qualified.casefold()]
        if sort == "failed" and refs:
            failed = connection_groups.ask(
                group, functools.partial(counts.one_count_each, refs=refs, name="failed")
            )
            # Most failed first; a stable sort keeps discovery's name order
            # among equal counts (no QueueRef comparisons: see discovery._BY_NAME).
            # None: the server stopped answering (the group now says unreachable).
            pairs = (
                sorted(zip(failed, refs, strict=True), key=lambda pair: -pair[0]) if failed else []
            )
            refs = [ref for _, ref in pairs]
        matching[group.name] = len(refs)
        listed.extend((group, ref) for ref in refs)
    last_page = max(1, -(-len(listed) // OVERVIEW_PAGE_SIZE))
    number = min(int_param(request.GET.get("page"), 1, lowest=1), last_page)
    start = (number - 1) * OVERVIEW_PAGE_SIZE
    shown = listed[start : start + OVERVIEW_PAGE_SIZE]
    for group in groups:
        page_refs = [ref for owner, ref in shown if owner is group]
        connection_groups.read_summaries(
            group, page_refs, count_workers=queue_workers, history_minutes=counts.METRICS_POINTS
        )
        if sort == "failed":
            # Ordered again by the counts the rows show: a failure between the
            # two reads must not put a row out of order against its number.
            group.summaries.sort(key=lambda s: (-s.counts["failed"], s.ref))
    drawn = any(s.completed_per_minute or s.failed_per_minute for g in groups for s in g.summaries)
    several = connections.several()
    sections = [
        GroupSection(
            group,
            presenters.queue_rows(group.summaries, workers=group.workers),
            matching.get(group.name, 0),
        )
        for group in groups
        # A group shows where its rows are; one that does not answer, on every page.
        if group.summaries or (several and (not group.reachable or number == 1))
    ]
    page = OverviewPage(
        start=start,
        size=OVERVIEW_PAGE_SIZE,
        total=len(listed),
        rows=[row for section in sections for row in section.rows],
        known=sum(len(group.refs) for group in groups),
        needle=needle,
        sort=sort,
        number=number,
    )
    context = {
        "page": page,
        "sections": sections,
        "several": several,
        # No scale to state when no row on the page has a per-minute series.
        "drawn": drawn,
        "spark_slots": counts.METRICS_POINTS,  # the minutes a sparkline's width stands for
        "states": states.STATES,
    }
    name = "_overview_list" if is_htmx(request) else "overview"
    return render_page(request, f"dashboard/browse/{name}.html", context)


@dataclass(slots=True)
class GroupSection:
    """A connection's part of the overview's page: its heading and its rows."""

    group: connection_groups.ConnectionGroup
    rows: list[SafeString]
    matching: int  # its queues the filter lets through, on every page


@page_view(fragments=True)
def queue_page(request: HttpRequest, client: Redis, ref: QueueRef) -> HttpResponse:
    # An hour of per-minute metrics lets an empty tab say what did happen.
    (summary,) = counts.queue_summaries(client, [ref], metrics_points=60)
    default_state = "failed" if summary.counts["failed"] else "wait"
    state = request.GET.get("state", default_state)
    if state not in states.STATES:
        return HttpResponseBadRequest("Unknown state")
    page_number, size = page_params(request)
    jobs = lists.job_page(client, ref, state, start=(page_number - 1) * size, size=size)
    # The counts and the list are two reads: the list's total stands for its tab,
    # so the tab, the bulk buttons and the pager of one answer never disagree.
    summary.counts[state] = jobs.total
    counted = queue_workers(client, [summary])
    context = queue_context(
        ref, summary, state, counted.get(ref) if counted else None, chart=not is_htmx(request)
    )
    acting = can_act(request.user)
    row_actions = actions.ACTIONS_BY_STATE[state]
    selectable = acting and bool(row_actions)
    context.update(
        jobs=jobs,
        tab_state=states.TAB[state],
        rows_html=presenters.job_rows_html(jobs, selectable=selectable),
        page_number=page_number,
        page_sizes=PAGE_SIZES,
        size=size,
        row_actions=row_actions,
        selectable=selectable,
        bar=action_bars.action_bar(ref, state) if acting else None,
        clean_ages=action_bars.CLEAN_AGES,
        default_clean_age=action_bars.DEFAULT_CLEAN_AGE_MS,
        fragment=is_htmx(request),
        empty_hint="" if jobs.rows else presenters.empty_tab_hint(state, summary),
    )
    name = "_job_table" if is_htmx(request) else "queue"
    return render_page(request, f"dashboard/browse/{name}.html", context)


@page_view(fragments=True)
def events_page(request: HttpRequest, client: Redis, ref: QueueRef) -> HttpResponse:
    # "" (the default): state changes only; "all": every event; else one event.
    shown = request.GET.get("type", "").strip()
    event_type = shown if shown not in ("", "all") else None
    job_filter = request.GET.get("job", "").strip() or None
    try:
        page = events.events_page(
            client,
            ref,
            before=request.GET.get("before") or None,
            size=100,
            event_type=event_type,
            job_id=job_filter,
            skip_events=QUIET_EVENTS if not shown else (),
        )
    except InvalidName:
        return HttpResponseBadRequest("Not a stream id")
    (summary,) = counts.queue_summaries(client, [ref], metrics_points=0)
    context = queue_context(ref, summary, "events", chart=not is_htmx(request))
    context.update(
        page=page,
        event_type=shown,
        job_filter=job_filter or "",
        event_types=states.EVENT_TONES,  # its keys: every event, in order
        quiet_events=QUIET_EVENTS,
        continued=bool(request.GET.get("before")),
    )
    name = "_event_rows" if is_htmx(request) else "events"
    return render_page(request, f"dashboard/browse/{name}.html", context)


@page_view(fragments=True)
def job_page(request: HttpRequest, client: Redis, ref: QueueRef, job_id: str) -> HttpResponse:
    job_id = job_id_or_404(job_id)
    logs_page = int_param(request.GET.get("logs"), 1, lowest=1)
    full_data = request.GET.get("full") == "1"
    detail = job_detail(
        client,
        ref,
        job_id,
        logs_start=(logs_page - 1) * LOGS_PAGE_SIZE,
        logs_size=LOGS_PAGE_SIZE,
        full_data=full_data,
    )
    if detail is None:
        context = {"ref": ref, "job_id": job_id}
        return render_page(request, "dashboard/browse/job_missing.html", context, status=404)
    job_actions = actions.ACTIONS_BY_STATE.get(detail.state or "", ("remove",))
    context = {
        "ref": ref,
        "detail": detail,
        "job": detail.job,
        "events": events.job_events(client, ref, job_id, size=30),
        "status": presenters.job_status_html(detail, int(time.time() * 1000)),
        "buttons": action_bars.job_buttons(job_id, detail.job.name, detail.state, job_actions),
        "progress_label": presenters.progress_label(detail.progress),
        "full_data_query": _job_query(logs_page, full=True),
        "earlier_logs_query": _job_query(logs_page - 1, full=full_data),
        "later_logs_query": _job_query(logs_page + 1, full=full_data),
        "logs_page": logs_page,
        "logs_has_next": detail.logs_start + len(detail.logs) < detail.logs_total,
        **flows.flow_context(client, ref, job_id),
        "editable": detail.state in job_edits.EDITABLE_STATES,
    }
    fragment = request.GET.get("fragment")
    if is_htmx(request) and fragment in ("data", "logs"):
        return render_page(request, f"dashboard/browse/_job_{fragment}.html", context)
    # Read for the whole page only: its fragments show no audit rows.
    context["changes"] = job_edits.changes_of_job(ref, job_id, detail.job.timestamp)
    return render_page(request, "dashboard/browse/job.html", context)


def _job_query(logs_page: int, *, full: bool) -> str:
    """A job page's query string: which page of logs, all data or not. The
    links that load more put it in the address (hx-replace-url), so the live
    refresh, which refetches the address, keeps showing what was loaded."""
    return f"?logs={logs_page}" + ("&full=1" if full else "")


@page_view()
def goto_job(request: HttpRequest, client: Redis, ref: QueueRef) -> HttpResponse:
    wanted = request.GET.get("job", "").strip()
    try:
        (job_id,) = clean_job_ids([wanted])
    except (InvalidName, ValueError):
        messages.error(request, f"“{wanted[:100]}” is not a job id")
        return redirect(queue_url("dashboard:queue", ref))
    return redirect(queue_url("dashboard:job", ref, job_id))


def _state_tab_url(request: HttpRequest, ref: QueueRef) -> str:
    """Back to the tab of the state the bar acted on (posted empty: the queue's page)."""
    url, state = queue_url("dashboard:queue", ref), request.POST.get("state", "failed")
    return f"{url}?state={state}" if state else url


@form_view(_state_tab_url, act=True)
def job_actions(request: HttpRequest, client: Redis, ref: QueueRef) -> tuple[str, bool]:
    result = actions.job_action(
        client,
        ref,
        request.POST.get("action", ""),
        clean_job_ids(request.POST.getlist("ids")),
        user=user_label(request.user),
        state=request.POST.get("state", "failed"),
        reason=request.POST.get("reason", "")[:1000],
    )
    return result.message, bool(result.ok and result.count)


@form_view(_state_tab_url, act=True)
def queue_actions(request: HttpRequest, client: Redis, ref: QueueRef) -> tuple[str, bool]:
    result = actions.queue_action(
        client,
        ref,
        request.POST.get("action", ""),
        user=user_label(request.user),
        state=request.POST.get("state", "failed"),
        grace_ms=int_param(request.POST.get("grace_ms"), -1, lowest=-1),
    )
    # Jobs left behind as broken need a look: not a plain success.
    return result.message, not result.skipped


def live_socket_over_http(request: HttpRequest) -> HttpResponse:
    """The live updates' WebSocket path over plain HTTP: in these URLs so that
    it follows the app's prefix (the socket's route is built from it, live.routing)."""
    return HttpResponseBadRequest(
        "This is the live updates' WebSocket: open it with a WebSocket client.",
        content_type="text/plain; charset=utf-8",
    )
