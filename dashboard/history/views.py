"""The metrics history as fragments each page loads after itself: the queue
page's chart (one pipeline of at most 1,440 small hashes) and the overview's
last hour per queue (at most ``SUMMARY_QUEUES``, once per ``SUMMARY_CACHE_S``).
"""

from __future__ import annotations

import hashlib
from typing import Any

from django.core.cache import cache
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.utils.html import escape, format_html
from django.utils.safestring import SafeString
from redis import Redis

from dashboard.core import connections
from dashboard.core.queue_urls import queue_url
from dashboard.history.chart import history_chart, history_missing, markers_for
from dashboard.shared import connection_groups
from dashboard.shared.charts import FAILURES_MEANING
from dashboard.shared.formatting import format_ms, percent
from dashboard.shared.web import page_view
from queues.read.history import (
    DEFAULT_RANGE,
    LAGGING_S,
    RANGES,
    Figures,
    collector_status,
    fitted,
    history,
    recent,
)
from queues.read.refs import QueueRef
from queues.read.states import FAILED


def range_links(ref: QueueRef, chosen: str) -> SafeString:
    base = escape(queue_url("dashboard:history", ref))
    links = ""
    for name in RANGES:  # our own words: nothing to escape
        active, current = (" active", ' aria-current="true"') if name == chosen else ("", "")
        links += (
            f'<a class="btn btn-small{active}" href="{base}?range={name}"'
            f' hx-get="{base}?range={name}" hx-target="closest [data-history-chart]"'
            f' hx-swap="outerHTML"{current}>{name}</a>'
        )
    return SafeString(
        f'<span class="history-ranges" role="group" aria-label="Range">{links}</span>'
    )


@page_view()
def history_fragment(request: HttpRequest, client: Redis, ref: QueueRef) -> HttpResponse:
    chosen = request.GET.get("range", "")
    if chosen in RANGES:
        read = history(client, ref, chosen)
    else:
        # No range asked (the page's first load): the default's span, narrowed
        # to the data when it all lies in a shorter range.
        read = fitted(history(client, ref, DEFAULT_RANGE))
    links = range_links(ref, read.range.name)
    if not read.recorded_anything:  # the collector's status is read only then
        status = collector_status(client)
        if not status.is_current(read.read_at_ms):
            return HttpResponse(history_missing(read, links, status.caught_up_ms))
    return HttpResponse(history_chart(read, markers_for(read), links))


SUMMARY_QUEUES = 200
SUMMARY_ROWS = 15
# 12,000 small hashes for 200 queues, asked by every overview load: one reading
# serves every viewer of the process this long (docs/benchmarks.md).
SUMMARY_CACHE_S = 10
# A failure rate from this on is marked, in the failed state's colour.
FAILING_RATE = 0.05


def _failure_rate(rate: float | None) -> str:
    if rate is None:  # nothing finished: the dash the wait and run cells show for none
        return format_ms(None)
    if rate < FAILING_RATE:
        return percent(rate)
    return format_html('<span class="badge state-{}">{}</span>', FAILED.name, percent(rate))


def _last_hour() -> dict[str, Any]:
    """What the overview's last hour shows: every reachable server's queues (at
    most ``SUMMARY_QUEUES`` in all), the servers that did not answer."""
    figures: dict[QueueRef, Figures] = {}
    lags: list[float | None] = []  # None: no collector ever caught up there
    unreachable: list[str] = []
    for group in connection_groups.discovered():
        refs = group.refs[: SUMMARY_QUEUES - len(figures)]

        def last_hour(client: Redis, refs: list[QueueRef] = refs) -> tuple[Any, float | None]:
            return recent(client, refs), collector_status(client).lag_s()

        # None: the server did not answer now or lately (ask remembers which).
        answer = connection_groups.ask(group, last_hour)
        if answer is None:
            unreachable.append(group.name)
            continue
        figures.update(answer[0])
        lags.append(answer[1])
    active = [(ref, f) for ref, f in figures.items() if f.completed + f.failed or f.backlog]
    # Most failing first, then the busiest: the rows an on-call engineer looks for.
    active.sort(
        key=lambda item: (-(item[1].failure_rate or 0), -(item[1].completed + item[1].failed))
    )
    # The furthest behind of the servers' collectors is the one to warn of.
    lag = max((lag for lag in lags if lag is not None), default=None)
    return {
        # (queue, its figures, its failure rate): the template formats the rest.
        "rows": [(ref, f, _failure_rate(f.failure_rate)) for ref, f in active[:SUMMARY_ROWS]],
        "more": max(0, len(active) - SUMMARY_ROWS),
        "queues": len(figures),
        "lagging": None if lag is None else (round(lag) if lag > LAGGING_S else None),
        "never": bool(lags) and lag is None,
        "unreachable": unreachable,
    }


@page_view(queue=False)
def history_summary(request: HttpRequest) -> HttpResponse:
    servers = "\n".join(repr(connection) for connection in connections.configured())
    key = "echomq:last-hour:" + hashlib.sha256(servers.encode()).hexdigest()
    context: dict[str, Any] | None = cache.get(key)
    if context is None:
        context = _last_hour()
        cache.set(key, context, SUMMARY_CACHE_S)
    return render(
        request,
        "dashboard/history/_history_summary.html",
        # The phone's words beside the figures, from the one definition of the states.
        {**context, "several": connections.several(), "failures_meaning": FAILURES_MEANING},
    )
