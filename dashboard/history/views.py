"""The metrics history as fragments each page loads after itself: the queue
page's chart (one pipeline of at most 1,440 small hashes) and the overview's
last hour per queue (at most ``SUMMARY_QUEUES``, once per ``SUMMARY_CACHE_S``).
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass

from django.core.cache import cache
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.utils.html import escape, format_html
from django.utils.safestring import SafeString
from django.views.decorators.http import require_GET
from redis import Redis

from dashboard.core import connections
from dashboard.core.lookup import queue_or_404
from dashboard.core.permissions import page_permission
from dashboard.core.queue_urls import queue_url
from dashboard.core.redis import get_client
from dashboard.history.chart import history_chart, history_missing, markers_for
from dashboard.shared import connection_groups
from dashboard.shared.charts import FAILURES_MEANING
from dashboard.shared.formatting import format_ms, percent
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
        on = name == chosen
        links += (
            f'<a class="btn btn-small{" active" if on else ""}" href="{base}?range={name}"'
            f' hx-get="{base}?range={name}" hx-target="closest [data-history-chart]"'
            f' hx-swap="outerHTML"{_CURRENT if on else ""}>{name}</a>'
        )
    return SafeString(
        f'<span class="history-ranges" role="group" aria-label="Range">{links}</span>'
    )


_CURRENT = ' aria-current="true"'


@require_GET
@page_permission()
def history_fragment(request: HttpRequest, prefix: str, name: str) -> HttpResponse:
    client = get_client()
    ref = queue_or_404(client, prefix, name)
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


@dataclass(frozen=True, slots=True)
class ServerHour:
    figures: dict[QueueRef, Figures]
    lag_s: float | None  # None: no collector ever caught up there


def _last_hours() -> tuple[list[ServerHour], int, list[str]]:
    """Every reachable server's last hour (at most ``SUMMARY_QUEUES`` queues in
    all), how many queues were read, and the servers that did not answer."""
    hours: list[ServerHour] = []
    unreachable: list[str] = []
    read = 0
    for group in connection_groups.discovered():
        refs = group.refs[: SUMMARY_QUEUES - read]

        def last_hour(client: Redis, refs: list[QueueRef] = refs) -> ServerHour:
            return ServerHour(recent(client, refs), collector_status(client).lag_s())

        # None: the server did not answer now or lately (ask remembers which).
        answer = connection_groups.ask(group, last_hour)
        if answer is None:
            unreachable.append(group.name)
            continue
        hours.append(answer)
        read += len(refs)
    return hours, read, unreachable


@require_GET
@page_permission()
def history_summary(request: HttpRequest) -> HttpResponse:
    servers = "\n".join(repr(connection) for connection in connections.configured())
    key = "echomq:last-hour:" + hashlib.sha256(servers.encode()).hexdigest()
    kept: tuple[list[ServerHour], int, list[str]] | None = cache.get(key)
    if kept is None:
        kept = _last_hours()
        cache.set(key, kept, SUMMARY_CACHE_S)
    hours, queues, unreachable = kept
    active = [
        (ref, f)
        for hour in hours
        for ref, f in hour.figures.items()
        if f.completed + f.failed or f.backlog
    ]
    # Most failing first, then the busiest: the rows an on-call engineer looks for.
    active.sort(
        key=lambda item: (-(item[1].failure_rate or 0), -(item[1].completed + item[1].failed))
    )
    # (queue, its figures, its failure rate): the template formats the rest.
    rows = [(ref, f, _failure_rate(f.failure_rate)) for ref, f in active[:SUMMARY_ROWS]]
    lags = [hour.lag_s for hour in hours if hour.lag_s is not None]
    # The furthest behind of the servers' collectors is the one to warn of.
    lag = max(lags, default=None)
    context = {
        "rows": rows,
        "more": max(0, len(active) - SUMMARY_ROWS),
        "queues": queues,
        "lagging": None if lag is None else (round(lag) if lag > LAGGING_S else None),
        "never": bool(hours) and lag is None,
        "several": connections.several(),
        # The phone's words beside the figures, from the one definition of the states.
        "failures_meaning": FAILURES_MEANING,
        "unreachable": unreachable,
    }
    return render(request, "dashboard/history/_history_summary.html", context)
