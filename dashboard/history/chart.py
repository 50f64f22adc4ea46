"""The queue page's history chart (1 h / 24 h / 7 d / 30 d) as server-side SVG,
with the hour chart's parts (dashboard.shared.charts) in three bands on one time
axis: finished jobs, wait and run time (p95 solid, p50 dashed), backlog. A slot
is a point of the range or a few merged exactly (at most 288).
"""

from __future__ import annotations

import datetime as dt
import itertools
from collections.abc import Iterable, Sequence

from django.utils.html import escape
from django.utils.safestring import SafeString, mark_safe

from dashboard.shared.charts import (
    FAILURES_MEANING,
    Marker,
    chart_figure,
    chart_key,
    markers_since,
    markers_svg,
    nice_ceiling,
    slots_svg,
    time_ticks_svg,
)
from dashboard.shared.formatting import compact, failures, format_ms, span, thousands
from queues.read.history import Figures, History, HistoryRange

_MIN, _HOUR, _DAY = 60_000, 3_600_000, 86_400_000
# Per range: the points merged into a slot, the slots between time ticks, and
# the ticks' unit.
LAYOUTS = {
    "1h": (1, 10, _MIN, "min"),
    "24h": (5, 48, _HOUR, "h"),
    "7d": (1, 24, _DAY, "d"),
    "30d": (4, 30, _DAY, "d"),
}
# Bands, in % of the chart's height: counts, durations, backlog, time labels.
_C_TOP, _C_AXIS, _C_BOTTOM = 4.0, 26.0, 38.0
_D_TOP, _D_BOTTOM = 46.0, 70.0
_B_TOP, _B_BOTTOM = 78.0, 90.0
_TIME = 98.0
_MIN_BAR = 0.8
# The durations' lines: which, which percentile, drawn as.
_DURATION_LINES = (
    ("wait", 0.95, "line-wait"),
    ("wait", 0.5, "line-wait p50"),
    ("run", 0.95, "line-run"),
    ("run", 0.5, "line-run p50"),
)
_DASH = "\u2013"


def _merged(figures: Iterable[Figures]) -> Figures:
    total = Figures()
    for each in figures:
        total.merge(each)
    return total


def _when(start_ms: int, chosen: HistoryRange, merge: int) -> str:
    start = dt.datetime.fromtimestamp(start_ms / 1000, tz=dt.UTC)
    end = dt.datetime.fromtimestamp((start_ms + chosen.step_ms * merge) / 1000, tz=dt.UTC)
    end_format = "%H:%M" if chosen.step_ms * merge < _DAY else "%b %d %H:%M"
    return f"{start:%b %d %H:%M}{_DASH}{end:{end_format}} UTC"


def _readout(f: Figures, current: bool, when: str) -> str:
    parts = [f"{when}{' (so far)' if current else ''}:"]
    parts.append(f"{thousands(f.completed)} completed, {failures(f.failed)}")
    for name, durations in (("wait", f.wait), ("run", f.run)):
        if durations.count:
            parts.append(
                f"· {name} p50 {format_ms(durations.percentile(0.5))},"
                f" p95 {format_ms(durations.percentile(0.95))}, max {format_ms(durations.max_ms)}"
            )
    if f.backlog is not None:
        parts.append(f"· backlog {thousands(f.backlog)}")
    if f.gaps:
        parts.append("· some events were trimmed before they were read: counts may be low")
    return " ".join(parts)


def _line(css: str, values: Sequence[float | None], top: float, band: tuple[float, float]) -> str:
    """A line through ``values``, one a slot (None breaks it); a lone value is a
    dot. Segments, not a polyline: points in % need them."""
    width = 100 / len(values)
    high, low = band
    runs: list[list[tuple[str, str]]] = [[]]
    for index, value in enumerate(values):
        if value is None:
            if runs[-1]:
                runs.append([])
            continue
        y = low - min(value / max(top, 1e-9), 1.0) * (low - high)
        runs[-1].append((f"{(index + 0.5) * width:.3f}%", f"{y:.2f}%"))
    drawn = []
    for run in runs:
        if len(run) == 1:
            drawn.append(f'<circle class="{css}" cx="{run[0][0]}" cy="{run[0][1]}" r="2"/>')
        for (x1, y1), (x2, y2) in itertools.pairwise(run):
            drawn.append(f'<line class="{css}" x1="{x1}" y1="{y1}" x2="{x2}" y2="{y2}"/>')
    return "".join(drawn)


def _band_titles(slot: str) -> str:
    """Each band's title; the counts' with how long a bar is (the scale's numbers
    are jobs per bar, and a bar is 1 min to 4 h depending on the range)."""
    return "".join(
        f'<text class="tick band-title" x="0.3%" y="{y}%" dominant-baseline="hanging">'
        f"{words}</text>"
        for y, words in (
            (_C_TOP - 3.5, f"jobs finished per {slot} (failures below the line)"),
            (_D_TOP - 3.5, "wait and run time (p95 solid, p50 dashed)"),
            (_B_TOP - 3.5, "backlog (waiting + prioritized)"),
        )
    )


def history_chart(history: History, markers: Sequence[Marker], range_links: str) -> SafeString:
    """The figure: range links, the three bands, a readout line, the markers listed."""
    chosen = history.range
    merge, tick_every, tick_unit_ms, tick_unit = LAYOUTS[chosen.name]
    points = history.points
    firsts = range(0, len(points), merge)  # each slot's first point
    figures = [
        _merged(point.figures for point in points[first : first + merge]) for first in firsts
    ]
    width = 100 / len(figures)
    percentiles = [
        (css, [getattr(f, kind).percentile(q) if getattr(f, kind).count else None for f in figures])
        for kind, q, css in _DURATION_LINES
    ]
    top_ms = float(
        nice_ceiling(max((v for _, vs in percentiles for v in vs if v is not None), default=1))
    )
    top_backlog = nice_ceiling(max((f.backlog_max or f.backlog or 0 for f in figures), default=0))
    drawn = []
    for first, f in zip(firsts, figures, strict=True):
        current = first + merge >= len(points)
        when = _when(points[first].start_ms, chosen, merge)
        words = escape(_readout(f, current, when))
        data = f'data-when="{escape(when)}" data-readout="{words}"'
        drawn.append((data, words, current, (f.completed, f.failed)))
    bars, (top_done, top_failed) = slots_svg(drawn, (_C_TOP, _C_AXIS, _C_BOTTOM), _MIN_BAR)
    lines = "".join(_line(css, vs, top_ms, (_D_TOP, _D_BOTTOM)) for css, vs in percentiles)
    backlogs = [f.backlog for f in figures]
    lines += _line("line-backlog", backlogs, top_backlog, (_B_TOP, _B_BOTTOM))
    start_ms = points[0].start_ms
    span_ms = chosen.points * chosen.step_ms
    xs = ((m.at_ms - start_ms) / span_ms * 100 for m in markers)
    drawn_markers = markers_svg(markers, xs, _C_TOP - 2, _B_BOTTOM)
    total = _merged(figures)
    summary = (
        f"{thousands(total.completed)} completed, {failures(total.failed)} in the last"
        f" {chosen.label}"
    )
    if total.wait.count:
        summary += f"; wait p95 {format_ms(total.wait.percentile(0.95))}"
    if total.run.count:
        summary += f", run p95 {format_ms(total.run.percentile(0.95))}"
    label = escape(f"Queue history, last {chosen.label}: {summary}")
    slot_ms = chosen.step_ms * merge
    last = len(figures) - 1
    ticks = (
        (
            (index + 0.5) * width,
            f"{(last - index) * slot_ms // tick_unit_ms} {tick_unit}",
        )
        for index in range(last - tick_every, 0, -tick_every)
    )
    rules = (
        (_C_TOP, "grid", compact(top_done)),
        (_C_AXIS, "axis", "0"),
        (_C_BOTTOM, "grid", compact(top_failed)),
        (_D_TOP, "grid", format_ms(top_ms)),
        (_D_BOTTOM, "axis", "0"),
        (_B_TOP, "grid", compact(top_backlog)),
        (_B_BOTTOM, "axis", "0"),
    )
    plot = (
        f'{_band_titles(span(slot_ms))}{bars}<g class="lines">{lines}</g>'
        f"{time_ticks_svg(ticks, _B_BOTTOM, 2, _TIME)}{drawn_markers}"
    )
    head = (
        f'<figure class="queue-chart history-chart" data-history-chart data-range="{chosen.name}">'
        f'<figcaption><span class="chart-title">History</span>{range_links}'
        f"{chart_key('completed', 'completed')}"
        f"{chart_key('failed', 'failures', FAILURES_MEANING)}"
        f"{chart_key('wait', 'wait')}{chart_key('run', 'run')}{chart_key('backlog', 'backlog')}"
        f"</figcaption>{stopped_note(history)}"
    )
    return chart_figure(head, rules, 300, label, plot, escape(summary), markers, chosen.label)


def history_missing(history: History, range_links: str, caught_up_ms: int | None) -> SafeString:
    """What the history slot says instead of a flat chart of zeros when the
    range holds nothing and no collector is current: an empty chart would claim
    an idle queue ("0 completed, 0 failed") beside counts that say otherwise."""
    if caught_up_ms is None:
        why = (
            "No history yet: no dashboard process has collected it (see"
            " <code>ECHOMQ_HISTORY_COLLECTOR</code>). The counts above come from the jobs kept."
        )
    else:
        why = escape(
            f"Nothing recorded in the last {history.range.label}, and the collector last caught"
            f" up {span(history.read_at_ms - caught_up_ms)} ago: what happened since is not in"
            " the history yet."
        )
    return mark_safe(  # noqa: S308 - fixed words, numbers and escaped text only
        f'<figure class="queue-chart history-chart no-series" data-history-chart'
        f' data-range="{history.range.name}">'
        f'<figcaption><span class="chart-title">History</span>{range_links}</figcaption>'
        f'{stopped_note(history)}<p class="muted" data-history-missing>{why}</p></figure>'
    )


def stopped_note(history: History) -> str:
    """What the chart says above itself when the collector stopped this
    queue's history (one of its keys is broken; queues/collector_report.py):
    the figures end there, and the key to repair is named."""
    if not history.stopped:
        return ""
    return (
        '<p class="message message-warning" data-history-stopped>'
        f"The history of this queue stopped: {escape(history.stopped)}. Repair or delete that"
        " key in Redis (deleting the state key starts this queue's history over): it resumes"
        " within seconds. Other queues' history goes on.</p>"
    )


def markers_for(history: History) -> list[Marker]:
    """The queue's admin actions in the chart's window."""
    span = history.range.points * history.range.step_ms
    start = history.points[0].start_ms if history.points else history.read_at_ms - span
    return markers_since(history.ref, start)
