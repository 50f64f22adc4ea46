"""Display rows for the templates, built in Python.

Django's template engine costs microseconds per variable; a page of 50 jobs or
50 queues with a dozen values each adds up. These presenters format every
value once (numbers for humans, times, URLs with a single reverse() per page)
so the templates only place strings.
"""

from __future__ import annotations

import datetime as dt
import json
import re
import time
from collections.abc import Sequence
from dataclasses import dataclass
from urllib.parse import quote

from django.urls import reverse
from django.utils.html import conditional_escape, escape, format_html
from django.utils.safestring import SafeString, mark_safe

from dashboard import charts

# Re-exported: presenters.thousands / compact read well in templates' tag code.
from dashboard.formatting import compact as compact
from dashboard.formatting import thousands as thousands
from dashboard.health import Health, queue_health
from queues import inspect
from queues.inspect import JobPage, QueueRef, QueueSummary

# What Django's reverse() leaves unescaped in a path (RFC 3986 sub-delims + "/~:@").
_PATH_SAFE = "!$&'()*+,;=/~:@"

STATE_LABELS = {
    "wait": "waiting",
    "prioritized": "prioritized",
    "delayed": "delayed",
    "active": "active",
    "waiting-children": "waiting children",
    "completed": "completed",
    "failed": "failed",
    "paused": "paused",
    "events": "events",
}


def exact_time(ms: object) -> str:
    """Milliseconds since the epoch as an exact UTC time ("" when not a time)."""
    if not isinstance(ms, int) or isinstance(ms, bool):
        return ""
    try:
        moment = dt.datetime.fromtimestamp(ms / 1000, tz=dt.UTC)
    except (OverflowError, OSError, ValueError):
        return str(ms)
    return moment.strftime("%Y-%m-%d %H:%M:%S.%f")[:-3] + " UTC"


def span(ms: int) -> str:
    """A duration for humans: "340 ms", "4.2 s", "3 min", "2 h", "5 d"."""
    seconds = abs(ms) / 1000
    if seconds < 1:
        return f"{abs(ms)} ms"
    if seconds < 60:
        return f"{seconds:.1f} s".replace(".0 s", " s")
    for size, unit in ((86_400, "d"), (3_600, "h"), (60, "min")):
        if seconds >= size:
            return f"{int(seconds // size)} {unit}"
    return f"{int(seconds)} s"  # pragma: no cover - unreachable, keeps mypy happy


def relative_time(ms: object, now_ms: int | None = None) -> str:
    """ "3 min ago" / "in 2 h"; "—" when not a time."""
    if not isinstance(ms, int) or isinstance(ms, bool):
        return "—"
    delta = (now_ms if now_ms is not None else int(time.time() * 1000)) - ms
    if abs(delta) < 1000:
        return "just now"  # "340 ms ago" is precision nobody reads in a list
    return f"{span(delta)} ago" if delta >= 0 else f"in {span(delta)}"


_JSON_TOKEN = re.compile(
    r'(?P<string>"(?:\\.|[^"\\])*")(?P<colon>\s*:)?'
    r"|(?P<number>-?\d+(?:\.\d+)?(?:[eE][+-]?\d+)?)"
    r"|(?P<literal>\btrue\b|\bfalse\b|\bnull\b)"
)
HIGHLIGHT_LIMIT = 64 * 1024


def highlight_json(text: str) -> SafeString:
    """JSON text with keys, strings, numbers and literals in classed spans.

    Everything is escaped; text that is not JSON only gets harmless spans, and
    text over 64 KB is left plain (highlighting is for reading, not for 10 MB).
    """
    if len(text) > HIGHLIGHT_LIMIT:
        return conditional_escape(text)
    parts: list[str] = []
    position = 0
    for match in _JSON_TOKEN.finditer(text):
        parts.append(escape(text[position : match.start()]))
        if match.group("string") is not None:
            kind = "j-key" if match.group("colon") else "j-str"
            parts.append(f'<span class="{kind}">{escape(match.group("string"))}</span>')
            parts.append(escape(match.group("colon") or ""))
        else:
            kind = "j-num" if match.group("number") is not None else "j-lit"
            parts.append(f'<span class="{kind}">{escape(match.group(0))}</span>')
        position = match.end()
    parts.append(escape(text[position:]))
    return mark_safe("".join(parts))  # noqa: S308 - every piece above is escaped


def job_url_prefix(ref: QueueRef) -> str:
    """The URL of a job page minus the id: reverse() once per page, not per row."""
    return reverse("dashboard:job", args=[ref.prefix, ref.name, "_"])[:-1]


def job_url(prefix: str, job_id: str) -> str:
    return prefix + quote(job_id, safe=_PATH_SAFE)


@dataclass(slots=True)
class CountCell:
    state: str
    label: str
    count: int
    short: str
    exact: str
    url: str


@dataclass(slots=True)
class QueueRow:
    summary: QueueSummary
    url: str
    cells: list[CountCell]
    sparkline: SafeString
    health: Health

    @property
    def rate(self) -> SafeString:
        return charts.latest_rate(self.summary)

    @property
    def health_html(self) -> SafeString:
        return charts.health_note(self.health)

    @property
    def cells_html(self) -> SafeString:
        """The count cells of the row (see JobRowView.html for why not a template).

        Plain string building: states and labels are fixed words and counts
        are digits, so only the URL (from the queue's name) needs escaping,
        once per row; format_html's escaping of every piece cost more than the
        rest of the row.
        """
        url = escape(self.url)
        return mark_safe(  # noqa: S308 - the URL is escaped, everything else is ours
            "".join(
                f'<td class="num"><a href="{url}?state={c.state}" class="count state-{c.state}'
                f'{"" if c.count else " zero"}" data-label="{c.label}"'
                f' data-count-state="{c.state}" title="{c.exact} {c.label}">{c.short}</a></td>'
                for c in self.cells
            )
        )


def count_cells(base_url: str, counts: dict[str, int]) -> list[CountCell]:
    return [
        CountCell(
            state,
            STATE_LABELS[state],
            counts[state],
            compact(counts[state]),
            thousands(counts[state]),
            f"{base_url}?state={state}",
        )
        for state in inspect.STATES
    ]


def queue_rows(
    summaries: Sequence[QueueSummary], *, top: int, slots: int = inspect.METRICS_POINTS
) -> list[QueueRow]:
    """The overview's rows; their sparklines share the scale ``top`` per minute
    (charts.spark_scale)."""
    rows = []
    for summary in summaries:
        url = reverse("dashboard:queue", args=[summary.ref.prefix, summary.ref.name])
        rows.append(
            QueueRow(
                summary=summary,
                url=url,
                cells=count_cells(url, summary.counts),
                sparkline=charts.sparkline_svg(
                    summary.completed_per_minute, summary.failed_per_minute, slots, top
                ),
                health=queue_health(summary),
            )
        )
    return rows


def empty_tab_hint(tab: str, summary: QueueSummary, completed_last_hour: int | None) -> str:
    """What an empty tab can still tell the person looking at it, from counts
    and metrics the page already read ("" when nothing useful)."""
    counts = summary.counts
    done = (
        f"{thousands(completed_last_hour)} completed in the last hour."
        if completed_last_hour is not None
        else ""
    )
    if tab == "failed":
        return done or f"{thousands(counts['completed'])} completed jobs are kept."
    if tab == "active":
        if summary.paused:
            return "The queue is paused: workers take no new jobs."
        if counts["wait"]:
            return f"{thousands(counts['wait'])} waiting: are the workers running?"
        return done
    if tab == "wait":
        return f"{thousands(counts['active'])} active right now." if counts["active"] else done
    if tab == "completed" and completed_last_hour:
        return f"{done[:-1]}, not kept (removeOnComplete)."
    return ""


@dataclass(slots=True)
class JobRowView:
    id: str
    id_short: str
    url: str
    name: str
    missing: bool
    time_relative: str
    time_exact: str
    attempts: str
    progress_percent: int | None
    progress_text: str
    reason: str

    def html(self, *, selectable: bool, show_reason: bool) -> SafeString:
        """The row's <tr>. Built here rather than in a template: at 50 rows a
        page, Django's per-variable cost was most of the page's time. Every
        value goes through format_html's escaping."""
        check = (
            format_html(
                '<td class="check"><input type="checkbox" name="ids" value="{}"'
                ' aria-label="Select job {}"></td>',
                self.id,
                self.id,
            )
            if selectable
            else ""
        )
        if self.missing:
            name = mark_safe('<span class="muted">hash missing</span>')
        elif not self.name:
            name = mark_safe('<span class="muted">(no name)</span>')
        else:
            name = conditional_escape(self.name)
        if self.progress_percent is not None:
            progress = format_html(
                '<progress max="100" value="{}" aria-hidden="true"></progress>'
                ' <span class="pct">{}%</span>',
                self.progress_percent,
                self.progress_percent,
            )
        else:
            progress = format_html(
                '<span class="muted" title="{}">{}</span>', self.progress_text, self.progress_text
            )
        reason = (
            format_html('<td class="reason" title="{}">{}</td>', self.reason, self.reason)
            if show_reason
            else ""
        )
        return format_html(
            '<tr data-job-id="{}"{}>{}<td class="id"><a href="{}" title="{}">{}</a></td>'
            '<td class="name" title="{}">{}</td>'
            '<td class="when"><time title="{}">{}</time></td><td class="num">{}</td>'
            '<td class="progress">{}</td>{}</tr>',
            self.id,
            mark_safe(' class="missing"') if self.missing else "",
            check,
            self.url,
            self.id,
            self.id_short,
            self.name,
            name,
            self.time_exact,
            self.time_relative,
            self.attempts,
            progress,
            reason,
        )


def _truncate(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _progress_text(percent: int | None, progress: object) -> str:
    # Numeric progress shows as a bar; anything else as short JSON text (the
    # way the job page shows it), not as a Python repr.
    if percent is not None or progress is None:
        return ""
    if isinstance(progress, str):
        return _truncate(progress, 40)
    text = json.dumps(progress, ensure_ascii=False, default=str, separators=(", ", ": "))
    return _truncate(text, 40)


def job_rows_html(page: JobPage, *, selectable: bool) -> SafeString:
    """All rows of a job page as one block of escaped markup."""
    show_reason = page.state == "failed"
    rows = [row.html(selectable=selectable, show_reason=show_reason) for row in job_rows(page)]
    return mark_safe("\n".join(rows))  # noqa: S308 - each row is built by format_html


def job_rows(page: JobPage) -> list[JobRowView]:
    prefix = job_url_prefix(page.ref)
    now = int(time.time() * 1000)
    rows = []
    for row in page.rows:
        job = row.job
        if page.state == "delayed":
            moment = row.due_ms
        elif page.state in ("completed", "failed"):
            moment = job.finished_on
        else:
            moment = job.timestamp
        percent = row.progress_percent
        rows.append(
            JobRowView(
                id=job.id,
                id_short=_truncate(job.id, 40),
                url=job_url(prefix, job.id),
                name=_truncate(job.name, 300),
                missing=row.missing,
                time_relative=relative_time(moment, now),
                time_exact=exact_time(moment),
                attempts=f"{job.attempts_made}/{job.attempts}",
                progress_percent=percent,
                progress_text=_progress_text(percent, job.progress),
                reason=row.reason_line,
            )
        )
    return rows
