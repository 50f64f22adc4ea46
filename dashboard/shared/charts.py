"""Charts drawn on the server as SVG (the overview's sparklines, the queue page's
hour), readable without script: attributes and classes only (CSP allows no
inline style), exact values in ``<title>`` and data attributes for chart.js.
Numbers and fixed words need no escaping; every outside label is escaped.
"""

from __future__ import annotations

import datetime as dt
import functools
import html
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from django.utils.html import escape, format_html
from django.utils.safestring import SafeString, mark_safe

from dashboard.core.redis import get_client
from dashboard.models import AuditEntry
from dashboard.shared.formatting import compact, failures, minute_label, thousands
from dashboard.shared.health import Health, Workers, queue_health
from queues.read.counts import METRICS_POINTS, QueueSummary
from queues.read.history import with_history_series
from queues.read.refs import QueueRef
from queues.throughput import MINUTE_MS, padded

# The overview's sparkline: 90 px for 30 minutes, completed above the middle
# line and failures below it, each row on its own scale (half_scales).
SPARK_WIDTH = 90
SPARK_HALF = 11  # px from the middle line to the top (or bottom)
# The queue page's chart: the last CHART_MINUTES full minutes and the current one.
CHART_MINUTES = 60
MAX_MARKERS = 20


def nice_ceiling(value: float) -> int:
    """The smallest of 1, 2, 5, 10, 20, 50 ... at or above ``value``: a scale that
    reads at a glance and moves only when the traffic does."""
    magnitude = 1
    while True:
        for step in (1, 2, 5):
            if step * magnitude >= value:
                return step * magnitude
        magnitude *= 10


def half_scales(most_completed: float, most_failed: float) -> tuple[int, int]:
    """Every chart's full heights above the line (completed) and below (failures),
    the failures' never finer than a tenth of the completed one: one failure
    beside 400 completions is a sliver, a real incident still fills it."""
    top_completed = nice_ceiling(most_completed)
    return top_completed, nice_ceiling(max(most_failed, top_completed / 10))


def sparkline_points(points: Sequence[int], *, slots: int, direction: int, top: int) -> str:
    """Polygon points for per-minute counts drawn away from the middle line
    (``direction`` -1 up, 1 down; ``top`` reaches the edge), starting and ending
    on it so empty minutes draw nothing. The newest minute sits at the right of
    ``slots``, so five minutes draw short, not stretched; any count moves 2 px."""
    if not any(points):
        return ""  # nothing to draw: an empty polygon, not 30 points on the line
    scale = direction * SPARK_HALF / max(top, 1)
    lift = direction * 2
    # |value * scale| below the 2 px lift draws the lift instead (the same
    # choice as max(value * scale, lift, key=abs), at a third of its cost: the
    # overview draws 200 of these a page).
    least = 2 / abs(scale)
    xs = _spark_xs(len(points), slots)
    coords = [
        "%s,%.1f"  # noqa: UP031 - %-formatting is the fastest here (30 points a queue)
        % (x, SPARK_HALF + ((value * scale if value >= least else lift) if value > 0 else 0))
        for x, value in zip(xs, points, strict=True)
    ]
    if len(coords) == 1:
        # One minute of data: a bar one minute wide instead of a hairline.
        xs = _spark_xs(2, slots)
        coords.insert(0, f"{xs[0]},{coords[0].split(',')[1]}")
    return f"{xs[0]},{SPARK_HALF} {' '.join(coords)} {SPARK_WIDTH:.1f},{SPARK_HALF}"


@functools.lru_cache(maxsize=64)
def _spark_xs(count: int, slots: int) -> tuple[str, ...]:
    """The x of each minute, newest at the right: the same for every row, so once."""
    step = SPARK_WIDTH / max(slots - 1, 1)
    first = SPARK_WIDTH - (count - 1) * step
    return tuple("%.1f" % max(first + index * step, 0) for index in range(count))  # noqa: UP031


# A row without a series: "no metrics" read as a fault of the queue; the words
# say whose option it is, the title how to get a line.
NO_SERIES = mark_safe(
    '<span class="muted no-series" title="No per-minute line: the workers of this queue keep no'
    " metrics (BullMQ's metrics worker option, off by default), and no dashboard process keeps"
    " its history current (ECHOMQ_HISTORY_COLLECTOR), which would draw it"
    '">workers keep no metrics</span>'
)


# A row drawn from the dashboard's history, not the workers' metrics: said on hover.
_FROM_EVENTS = "; from the dashboard's history"


def sparkline_svg(summary: QueueSummary) -> SafeString:
    """The overview's row chart: completed above the line, failures below, each on
    the row's own scale, then the latest rate (which says how busy); the minutes'
    figures in data attributes for chart.js. Short words: a page of 100 rows
    stays under 300 KB."""
    completed, failed = summary.completed_per_minute, summary.failed_per_minute
    minutes = max(len(completed), len(failed))
    if not minutes:
        return NO_SERIES
    top_completed, top_failed = half_scales(max(completed, default=0), max(failed, default=0))
    # Only digits, commas and fixed words below: nothing to escape.
    words = (
        f"{thousands(sum(completed))} completed, {failures(sum(failed))} in the last"
        f" {minutes} min; full height {thousands(top_completed)}/min up,"
        f" {thousands(top_failed)}/min down{_FROM_EVENTS if summary.counted_from_events else ''}"
    )
    size = f'viewBox="0 -1 {SPARK_WIDTH} {2 * SPARK_HALF + 2}" width="{SPARK_WIDTH}"'
    series = (
        f'data-completed="{",".join(map(str, completed))}" data-failed='
        f'"{",".join(map(str, failed))}" data-newest="{summary.read_at_ms // MINUTE_MS - 1}"'
    )
    svg = (
        f'<svg class="sparkline" {size} height="{2 * SPARK_HALF + 2}" role="img" {series}'
        f' aria-label="{words}">'
        f'<line class="spark-base" x1="0" y1="{SPARK_HALF}" x2="{SPARK_WIDTH}" y2="{SPARK_HALF}"/>'
    )
    for css, points, direction, top in (
        ("spark-completed", completed, -1, top_completed),
        ("spark-failed", failed, 1, top_failed),
    ):
        drawn = sparkline_points(points, slots=METRICS_POINTS, direction=direction, top=top)
        svg += f'<polygon class="{css}" points="{drawn}"/>' if drawn else ""
    if not completed:
        return SafeString(f"{svg}</svg>")
    # The latest full minute's rate ("3.2k/min"), exact counts on hover. Digits,
    # commas and unit letters only: nothing to escape (format_html's escaping
    # was most of this on a 100-row overview).
    lost = failed[-1] if failed else 0
    return SafeString(
        f'{svg}</svg><span class="rate" title="latest full minute: {thousands(completed[-1])}'
        f' completed, {failures(lost)}">{compact(completed[-1])}/min</span>'
    )


# Where a chart's parts sit, in % of its height: the SVG has no viewBox, so x
# and y are percentages of its box, which CSS sizes, and text keeps its pixel
# size on any screen. The queue page's hour: bars above and below the axis,
# time labels under them.
_TOP, _AXIS, _BOTTOM, _TIME = 10.0, 58.0, 84.0, 97.0
_SLOT = 100 / (CHART_MINUTES + 1)
_MIN_BAR = 1.2  # a minute with any count is at least this tall (about 2 px)
_ACTION_WORDS = {
    "retry_all": "retry all",
    "promote_all": "promote all",
    "run_now": "run now",
    "edit_data": "edit data",
}


@dataclass(frozen=True, slots=True)
class Marker:
    at_ms: int
    label: str


def markers_since(ref: QueueRef, start_ms: int) -> list[Marker]:
    """The queue's admin actions from ``start_ms`` on (the newest MAX_MARKERS),
    from the audit trail of the queue's own Redis connection."""
    since = dt.datetime.fromtimestamp(start_ms / 1000, tz=dt.UTC)
    markers = []
    for entry in AuditEntry.on_queue_since(ref.qualified, since, MAX_MARKERS, ref.connection):
        at_ms = int(entry.at.timestamp() * 1000)
        what = _ACTION_WORDS.get(entry.action, entry.action)
        when = dt.datetime.fromtimestamp(at_ms / 1000, tz=dt.UTC).strftime("%H:%M:%S UTC")
        markers.append(Marker(at_ms, f"{when} · {what} by {entry.user}: {entry.result}"))
    return markers


@functools.lru_cache(maxsize=1024)
def _across(index: int, width: float) -> tuple[str, str]:
    """A slot's hit area and where its bars sit, in % across: the same on every chart."""
    left = index * width
    return (
        f'<rect class="hit" x="{left:.3f}%" y="0" width="{width:.3f}%" height="100%"/>',
        f'x="{left + width * 0.14:.3f}%" width="{width * 0.72:.3f}%"',
    )


# A slot of a chart: its data attributes, its words on hover, whether it is
# still filling, and its (completed, failed) or None for no data.
Slot = tuple[str, str, bool, tuple[int, int] | None]


def slots_svg(
    slots: Sequence[Slot], band: tuple[float, float, float], least: float
) -> tuple[str, tuple[int, int]]:
    """The slots side by side, each with its bars: completed up from the axis and
    failed down, on the two scales (half_scales) returned beside them, in ``band``
    (top, axis, bottom, in %), any count at least ``least`` tall."""
    counted = [done for *_, done in slots if done is not None]
    tops = half_scales(
        max((c for c, _ in counted), default=0), max((f for _, f in counted), default=0)
    )
    top, axis, bottom = band
    width = 100 / len(slots)
    drawn = []
    for index, (data, words, current, done) in enumerate(slots):
        hit, x = _across(index, width)
        bars = ""
        for kind, value, scale, room in (
            ("completed", done[0] if done else 0, tops[0], axis - top),
            ("failed", done[1] if done else 0, tops[1], bottom - axis),
        ):
            if value > 0:
                height = max(value / scale * room, least)
                y = axis - height if kind == "completed" else axis
                bars += f'<rect class="bar-{kind}" {x} y="{y:.2f}%" height="{height:.2f}%"/>'
        partial = " partial" if current else ""
        drawn.append(f'<g class="minute{partial}" {data}><title>{words}</title>{hit}{bars}</g>')
    return f'<g class="minutes">{"".join(drawn)}</g>', tops


def time_ticks_svg(ticks: Iterable[tuple[float, str]], axis: float, mark: float, y: float) -> str:
    """Ticks (x in %, how long ago) under the plot's ``axis``, and "now" at the right."""
    drawn = "".join(
        f'<line class="tick-mark" x1="{x:.3f}%" x2="{x:.3f}%" y1="{axis}%" y2="{axis + mark}%"/>'
        f'<text class="tick" x="{x:.3f}%" y="{y}%" text-anchor="middle">&#8722;{ago}</text>'
        for x, ago in ticks
    )
    now = f'<text class="tick" x="99.6%" y="{y}%" text-anchor="end">now</text>'
    return f'<g class="ticks">{drawn}{now}</g>'


def markers_svg(markers: Sequence[Marker], xs: Iterable[float], top: float, bottom: float) -> str:
    """Each admin action's line at its x (% across, kept inside) from ``top`` to ``bottom``."""
    drawn = ""
    for marker, at in zip(markers, xs, strict=True):
        x = min(max(at, 0.2), 99.8)
        label = escape(marker.label)
        drawn += (
            f'<g class="marker" data-marker="{label}"><title>{label}</title>'
            f'<line x1="{x:.3f}%" x2="{x:.3f}%" y1="{top}%" y2="{bottom}%"/>'
            f'<text x="{x:.3f}%" y="{top + 0.5}%" text-anchor="middle">▼</text>'
            f'<rect class="hit" x="{max(x - 0.6, 0):.3f}%" y="0" width="1.2%" height="{bottom}%"/>'
            "</g>"
        )
    return f'<g class="markers">{drawn}</g>'


def chart_key(kind: str, words: str, title: str = "") -> str:
    """A caption's key: the colour of ``kind`` and what it stands for."""
    hover = f' title="{title}"' if title else ""
    return f'<span class="chart-key"{hover}><span class="key key-{kind}"></span>{words}</span>'


def admin_actions(count: int) -> str:
    return f"{count} admin action{'s' if count != 1 else ''}"


def chart_figure(
    head: str,
    rules: Iterable[tuple[float, str, str]],
    height: int,
    label: str,
    plot: str,
    readout: str,
    markers: Sequence[Marker],
    window: str,
) -> SafeString:
    """A chart's figure after its ``head`` (the figure's tag and caption): its SVG
    and readout line, then its admin actions listed newest first. ``rules`` are
    its lines across (y in %, "grid" or "axis", the count they stand for), the
    counts in their own narrow SVG left of the plot so that none sits on a bar;
    ``plot`` is drawn over the lines."""
    texts = lines = ""
    for y, kind, count in rules:
        lines += f'<line class="{kind}" x1="0" x2="100%" y1="{y}%" y2="{y}%"/>'
        if count:
            texts += (
                f'<text class="tick" x="100%" dx="-6" y="{y}%" dominant-baseline="middle"'
                f' text-anchor="end">{count}</text>'
            )
    listed = ""
    if markers:
        items = "".join(f"<li>{escape(m.label)}</li>" for m in reversed(markers))
        listed = (
            f'<details class="chart-markers"><summary>{admin_actions(len(markers))} in the last'
            f" {window}</summary><ol>{items}</ol></details>"
        )
    return mark_safe(  # noqa: S308 - numbers, fixed words and escaped text only
        f'{head}<div class="chart-area"><svg class="chart-scale" width="52" height="{height}"'
        f' aria-hidden="true">{texts}</svg><svg class="chart" width="100%" height="{height}"'
        f' role="img" aria-label="{label}"><g class="grid-lines">{lines}</g>{plot}</svg></div>'
        f'<p class="chart-readout" data-chart-readout data-default="{readout}">{readout}</p>'
        f"{listed}</figure>"
    )


def _minutes(summary: QueueSummary) -> list[tuple[int, int] | None]:
    """(completed, failed) per slot of the chart's hour, oldest first and this
    minute last; None where there is no data."""
    completed, failed = summary.completed_per_minute, summary.failed_per_minute
    length = max(len(completed), len(failed))  # the read model lines them up already
    known: list[tuple[int, int] | None] = list(
        zip(padded(completed, length), padded(failed, length), strict=True)
    )
    return [None] * (CHART_MINUTES - len(known)) + known[-CHART_MINUTES:] + [summary.this_minute]


def hour_totals(summary: QueueSummary) -> tuple[int, int] | None:
    """(completed, failed) over the chart's hour, this minute included: the one
    "last hour" figure of the page; None without per-minute figures."""
    if not summary.completed_per_minute and not summary.failed_per_minute:
        return None
    counted = [slot for slot in _minutes(summary) if slot is not None]
    return sum(c for c, _ in counted), sum(f for _, f in counted)


def queue_chart(
    summary: QueueSummary, markers: Sequence[Marker], health: SafeString | None = None
) -> SafeString:
    """The queue page's chart of the last hour, so "did my fix work" shows as
    the red bars stopping after a marker; "" when the queue keeps no metrics."""
    totals = hour_totals(summary)
    if totals is None:
        return mark_safe("")
    this_minute_start = summary.read_at_ms // MINUTE_MS * MINUTE_MS
    window_start = this_minute_start - CHART_MINUTES * MINUTE_MS
    slots: list[Slot] = []
    for index, done in enumerate(_minutes(summary)):
        current = index == CHART_MINUTES
        when = minute_label(window_start + index * MINUTE_MS)
        when += ", this minute so far" if current else ""
        data, words = f'data-when="{when}"', f"{when}: no data"
        if done is not None:
            data += f' data-completed="{done[0]}" data-failed="{done[1]}"'
            words = f"{when}: {thousands(done[0])} completed, {failures(done[1])}"
        slots.append((data, words, current, done))
    bars, tops = slots_svg(slots, (_TOP, _AXIS, _BOTTOM), _MIN_BAR)
    last = slots[-2][3]
    latest = (
        f"{minute_label(this_minute_start - MINUTE_MS)}: {thousands(last[0])} completed,"
        f" {failures(last[1])}"
        if last is not None
        else "no data for the last full minute"
    )
    hour = f"{thousands(totals[0])} completed, {failures(totals[1])}"
    readout = escape(f"Last full minute, {latest} · {hour} in the last hour")
    label = f"Jobs finished per minute over the last hour: {hour}"
    if markers:
        label += f"; {admin_actions(len(markers))} marked"
    ticks = time_ticks_svg(
        ((m * _SLOT, f"{CHART_MINUTES - m} min") for m in (10, 20, 30, 40, 50)), _BOTTOM, 2.5, _TIME
    )
    xs = ((m.at_ms - window_start) / MINUTE_MS * _SLOT for m in markers)
    half = tops[0] / 2
    rules = (
        (_TOP, "grid", f"{compact(tops[0])}/min"),
        ((_TOP + _AXIS) / 2, "grid", compact(half) if half.is_integer() else f"{half:g}"),
        (_AXIS, "axis", "0"),
        (_BOTTOM, "grid", f"{compact(tops[1])}/min"),
    )
    plot = f"{bars}{ticks}{markers_svg(markers, xs, _TOP - 4, _BOTTOM)}"
    marker_key = ""
    if markers:
        marker_key = '<span class="chart-key"><span class="key-marker">▼</span>admin action</span>'
    head = (
        '<figure class="queue-chart" data-queue-chart><figcaption>'
        '<span class="chart-title">Jobs finished per minute, last hour</span>'
        f"{HISTORY_SOURCE if summary.counted_from_events else ''}{health or ''}"
        f"{chart_key('completed', 'completed (above the line)')}"
        f"{chart_key('failed', 'failures (below, own scale)', FAILURES_MEANING)}"
        f"{marker_key}</figcaption>"
    )
    return chart_figure(head, rules, 180, label, plot, readout, markers, "hour")


def health_note(health: Health) -> SafeString:
    """The health badge and its figures in words; a fine queue gets the figures
    alone, muted. html.escape, not format_html: every overview row has one."""
    detail = (
        f'<span class="health-detail">{html.escape(health.detail)}</span>' if health.detail else ""
    )
    if not health.kind:
        return SafeString(detail)
    state = "state-delayed" if health.kind == "stuck" else "state-failed"
    return SafeString(
        f'<span class="health health-{html.escape(health.kind)}"><span class="badge {state}">'
        f"{html.escape(health.label)}</span> {detail}</span>"
    )


def queue_chart_for(summary: QueueSummary, workers: Workers | None = None) -> SafeString:
    """The queue page's chart with its health and the hour's admin actions (reads
    the history and the audit rows: for views, never while a template renders)."""
    if summary.recent is None:
        return mark_safe("")
    health = health_note(queue_health(summary, workers))
    if not summary.completed_per_minute and not summary.failed_per_minute:
        (summary,) = with_history_series(
            get_client(summary.ref.connection), [summary], CHART_MINUTES
        )
        if not summary.counted_from_events:
            return format_html(
                '<figure class="queue-chart no-series" data-queue-chart><figcaption>{}</figcaption>'
                '<p class="muted">'
                "No per-minute chart: the workers of this queue keep no metrics (BullMQ's"
                " <code>metrics</code> worker option) and no dashboard process collects the"
                " history (<code>ECHOMQ_HISTORY_COLLECTOR</code>). Recent figures come from the"
                " jobs kept.</p></figure>",
                health,
            )
    start = summary.read_at_ms // MINUTE_MS * MINUTE_MS - CHART_MINUTES * MINUTE_MS
    return queue_chart(summary, markers_since(summary.ref, start), health)


# What a chart's "failures" count, against the failed tab's jobs (issue 21: a
# tab of 784 failed jobs beside "1,133 failed in the last hour" read as a
# contradiction). Fixed words: no escaping needed in an attribute.
FAILURES_MEANING = (
    "Failures: each time a job failed for good. A job retried and failed again counts"
    " again, and a failed job retried or removed since still counts; the failed tab"
    " counts the failed jobs kept now"
)


# The chart's source when the workers keep no metrics: said, with why on hover.
HISTORY_SOURCE = (
    '<span class="health-detail" title="The workers keep no metrics: these are'
    ' counted from the queue&#x27;s events by the dashboard">counted from the events</span>'
)
