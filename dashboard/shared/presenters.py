"""Display rows for the templates, built in Python: the template engine costs
microseconds a variable, so every value is formatted once here (one reverse()
per page) and the templates only place strings.
"""

from __future__ import annotations

import datetime as dt
import html
import json
import re
import time
from collections import defaultdict
from collections.abc import Mapping, Sequence
from functools import lru_cache
from typing import NotRequired, TypedDict
from urllib.parse import quote

from django.utils.html import conditional_escape, escape, format_html, format_html_join
from django.utils.safestring import SafeString, mark_safe
from django.utils.text import Truncator

from dashboard.core.queue_urls import PATH_SAFE, queue_url, queue_url_maker
from dashboard.shared import charts
from dashboard.shared.formatting import compact, span, thousands, truncate
from dashboard.shared.health import Workers, queue_health
from queues import codec
from queues.events import Event
from queues.read.counts import QueueSummary
from queues.read.failures import FailedAttempt, first_line
from queues.read.job import JobDetail
from queues.read.lists import JobPage
from queues.read.progress import Progress
from queues.read.refs import QueueRef
from queues.read.search import FoundText
from queues.read.states import EVENT_TONES, TAB, TABS, label


def exact_time(ms: object) -> str:
    """Milliseconds since the epoch as an exact UTC time ("" when not a time)."""
    if not isinstance(ms, int) or isinstance(ms, bool):
        return ""
    try:
        second = _utc_second(ms // 1000)
    except (OverflowError, OSError, ValueError):
        return str(ms)
    return f"{second}.{ms % 1000:03d} UTC"


@lru_cache(maxsize=256)
def _utc_second(seconds: int) -> str:
    """A live queue's events mostly share their second, and strftime was half the
    cost of an event's row."""
    return dt.datetime.fromtimestamp(seconds, tz=dt.UTC).strftime("%Y-%m-%d %H:%M:%S")


def running_label(ms: int) -> str:
    """ "running 42 s", "running 3 min" (the page script counts on in the same words)."""
    seconds = max(0, ms) // 1000
    return f"running {seconds} s" if seconds < 60 else f"running {span(seconds * 1000)}"


def running_html(processed_on: int | None, now_ms: int) -> SafeString:
    """An active job's running time; the script counts on from data-running-ms
    (time run when rendered, so the browser's clock is never compared)."""
    if processed_on is None:
        return mark_safe("")
    ran = max(0, now_ms - processed_on)
    return SafeString(  # digits and our words only
        f'<span class="running" data-running-ms="{ran}" title="started {exact_time(processed_on)}">'
        f"{running_label(ran)}</span>"
    )


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
    """JSON text with keys, strings, numbers and literals in classed spans, all
    escaped; over 64 KB left plain (highlighting is for reading, not for 10 MB)."""
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
    return queue_url("dashboard:job", ref, "_")[:-1]


def job_url(prefix: str, job_id: str) -> str:
    return prefix + quote(job_id, safe=PATH_SAFE)


# What an overview row's dot means, on hover and in the overview's legend.
LIVE_DOT_MEANING = "pulses as events arrive"
_LIVE_DOT = html.escape(LIVE_DOT_MEANING.capitalize())


def queue_rows(
    summaries: Sequence[QueueSummary], *, workers: Mapping[QueueRef, Workers] | None = None
) -> list[SafeString]:
    """The overview's ``<tr>``s; ``workers``: connected workers where counted.
    html.escape, as Django's escape() minus its lazy-string wrapper (a fifth of
    the row's time). The count cells are our own words and digits, so only the
    URL is escaped, once (format_html per piece cost more than the rest)."""
    queue_page_url = queue_url_maker("dashboard:queue")
    rows = []
    for summary in summaries:
        ref, counts = summary.ref, summary.counts
        health = queue_health(summary, None if workers is None else workers.get(ref))
        url = html.escape(queue_page_url(ref))
        paused = '<span class="badge state-paused">paused</span>' if summary.paused else ""
        cells = "".join(
            f'<td class="num"><a href="{url}?state={tab.name}" class="count state-{tab.name}'
            f'{"" if counts[tab.name] else " zero"}" data-label="{tab.label}"'
            f' data-count-state="{tab.name}" title="{thousands(counts[tab.name])}'
            f' {tab.label}">{compact(counts[tab.name])}</a></td>'
            for tab in TABS
        )
        # data-queue is the live subscription's name: with the connection when not the default.
        rows.append(
            SafeString(
                f'<tr data-queue="{html.escape(ref.address)}" class="{health.css}">\n'
                f'  <th scope="row">\n'
                f'    <span class="live-dot" data-live-dot aria-hidden="true"'
                f' title="{_LIVE_DOT}"></span>\n'
                f'    <a href="{url}" class="queue-name" title="{html.escape(ref.qualified)}">'
                f"{html.escape(ref.name)}</a>\n"
                f'    <span class="muted prefix">{html.escape(ref.prefix)}</span>\n'
                f"    {paused}{charts.health_note(health)}\n"
                f"  </th>\n"
                f"  {cells}\n"
                f'  <td class="spark">{charts.sparkline_svg(summary)}</td>\n'
                f"</tr>\n"
            )
        )
    return rows


def empty_tab_hint(tab: str, summary: QueueSummary) -> str:
    """What an empty tab can still tell, from what the page already read."""
    counts, hour = summary.counts, charts.hour_totals(summary)
    done = f"{thousands(hour[0])} completed in the last hour." if hour is not None else ""
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
    if tab == "completed" and hour and hour[0]:
        return f"{done[:-1]}, not kept (removeOnComplete)."
    return ""


# A manual retry keeps the attempt counters (docs/protocol.md), so a job retried
# after its attempts ran out made more than allowed: "2/1" read as a broken
# counter, and only a retry from outside the worker gets there, hence the words.
_OVER_ALLOWED = (
    '<span title="More attempts than allowed: after its attempts ran out the job was retried'
    ' by hand, and a manual retry keeps counting them.">{} <span class="muted">({} allowed;'
    " retried by hand)</span></span>"
)


def attempts_html(made: int, allowed: int) -> SafeString:
    """ "2/5", or past the allowed "2 (1 allowed; retried by hand)", never a
    fraction above one (ints: nothing to escape)."""
    if made <= allowed:
        return SafeString(f"{made}/{allowed}")
    return SafeString(_OVER_ALLOWED.format(made, allowed))


def attempt_of_html(number: int, allowed: int) -> SafeString:
    """ "attempt 2 of 5", or "attempt 2 (1 allowed; retried by hand)"."""
    if number <= allowed:
        return SafeString(f"attempt {number} of {allowed}")
    return SafeString(f"attempt {number} ({allowed} allowed; retried by hand)")


def _amount(value: int | float | None) -> str:
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    return f"{value:,}"


def progress_label(progress: Progress) -> str:
    """ "1 of 5" for counted work, "42%" for a percent, "" when there is no bar."""
    if progress.percent is None:
        return ""
    if progress.counted:
        return f"{_amount(progress.done)} of {_amount(progress.total)}"
    return f"{progress.percent}%"


def progress_html(progress: Progress) -> SafeString:
    """A progress bar and its words; other values as short JSON text, not a repr."""
    if progress.percent is not None:  # digits and our words: nothing to escape
        return SafeString(
            f'<progress max="100" value="{progress.percent}" aria-hidden="true"></progress>'
            f' <span class="pct">{progress_label(progress)}</span>'
        )
    value = progress.value
    if value is None:
        return mark_safe("")
    if isinstance(value, str):
        text = value
    else:
        text = json.dumps(value, ensure_ascii=False, default=str, separators=(", ", ": "))
    text = truncate(codec.printable(text), 40)
    return format_html('<span class="muted" title="{}">{}</span>', text, text)


_SELECT_ALL = mark_safe(
    '<th scope="col" class="check"><input type="checkbox" data-select-all'
    ' aria-label="Select all jobs on this page"></th>'
)
_REASON_HEADING = mark_safe('<th scope="col">Reason</th>')
_FOUND_HEADING = mark_safe('<th scope="col" class="found">Matched</th>')


def job_table_head_html(
    state: str, *, selectable: bool = False, time_heading: str = "", found: bool = False
) -> SafeString:
    """The <thead> over :func:`job_rows_html`'s rows, decided beside them;
    ``found`` adds a search's column of what each job matched."""
    tab = TAB[state]
    return format_html(
        '<thead><tr>{}<th scope="col">Id</th><th scope="col">Name</th><th scope="col">{}</th>'
        '<th scope="col" class="num">Attempts</th><th scope="col">Progress</th>{}{}</tr></thead>',
        _SELECT_ALL if selectable else "",
        time_heading or tab.time_heading,
        _REASON_HEADING if tab.shows_reason else "",
        _FOUND_HEADING if found else "",
    )


def _found_cell(found: FoundText | None) -> str:
    """A search result's "Matched" cell: the field and its text around the marked
    match; empty for a match with no place in a text (an id, a JSON path)."""
    if found is None:
        return '<td class="found"></td>'
    esc = html.escape
    return (
        f'<td class="found"><span class="found-field">{esc(found.name)}</span> <code>'
        f"{'…' if found.more_before else ''}{esc(found.before)}<mark>{esc(found.match)}</mark>"
        f"{esc(found.after)}{'…' if found.more_after else ''}</code></td>"
    )


_MISSING_NAME = '<span class="muted">hash missing</span>'
_NO_NAME = '<span class="muted">(no name)</span>'
_MISSING_ROW = ' class="missing"'


def job_rows_html(
    page: JobPage, *, selectable: bool, found: Mapping[str, FoundText] | None = None
) -> SafeString:
    """All rows of a job page; with ``found``, each ends with what its job matched.
    html.escape on what is read (Django's escape() minus its lazy-string wrapper)."""
    esc = html.escape
    prefix = job_url_prefix(page.ref)
    now = int(time.time() * 1000)
    tab = TAB[page.state]
    rows = []
    for row in page.rows:
        job = row.job
        if tab.row_time == "due":
            moment = row.due_ms
        elif tab.row_time == "finished":
            moment = job.finished_on
        else:
            moment = job.timestamp
        job_id = esc(job.id)
        check = (
            f'<td class="check"><input type="checkbox" name="ids" value="{job_id}"'
            f' aria-label="Select job {job_id}"></td>'
            if selectable
            else ""
        )
        shown_name = truncate(job.name, 300)
        name = _MISSING_NAME if row.missing else esc(shown_name) if shown_name else _NO_NAME
        progress: str = progress_html(row.progress)
        running = running_html(job.processed_on, now) if page.state == "active" else ""
        if running:
            progress = f"{progress} {running}" if progress else running
        reason = ""
        if tab.shows_reason:
            line = esc(row.reason_line)
            reason = f'<td class="reason" title="{line}">{line}</td>'
        # The times are our own digits and words: nothing to escape.
        rows.append(
            f'<tr data-job-id="{job_id}"{_MISSING_ROW if row.missing else ""}>{check}'
            f'<td class="id"><a href="{esc(job_url(prefix, job.id))}" title="{job_id}">'
            f'{esc(truncate(job.id, 40))}</a></td><td class="name" title="{esc(shown_name)}">'
            f'{name}</td><td class="when"><time title="{exact_time(moment)}">'
            f"{relative_time(moment, now)}</time></td>"
            f'<td class="num">{attempts_html(job.attempts_made, job.attempts)}</td>'
            f'<td class="progress">{progress}</td>'
            f"{reason}{'' if found is None else _found_cell(found.get(job.id))}</tr>"
        )
    return mark_safe("\n".join(rows))  # noqa: S308 - every value read is escaped in the rows


def job_status_html(detail: JobDetail, now_ms: int) -> SafeString:
    """The line under the job's title: how it ended, how long it has run, or why
    it retries; "" when the badge says it all (earlier failures never headline)."""
    job, state = detail.job, detail.state
    allowed = job.attempts
    latest = detail.failed_attempts[0] if detail.failed_attempts else None
    if state == "completed":
        made = max(job.attempts_made, job.attempts_started)
        return format_html("completed on attempt {}", made) if made > 1 else mark_safe("")
    if state == "failed":
        # "failed on attempt 1 of 1" would only repeat the badge.
        if latest is None or latest.number is None or latest.number == allowed == 1:
            return mark_safe("")
        return format_html("failed on {}", attempt_of_html(latest.number, allowed))
    earlier = failure_label(latest) if latest is not None else mark_safe("")
    if state == "active":
        started = max(job.attempts_started, 1)
        attempt = attempt_of_html(started, allowed) if started > 1 or allowed > 1 else mark_safe("")
        facts = format_html_join(", ", "{}", ((part,) for part in (attempt, earlier) if part))
        running = running_html(job.processed_on, now_ms)
        if running and facts:
            return format_html("{} · {}", running, facts)
        return running or facts
    if latest is None or state not in TAB or not TAB[state].will_run:
        return mark_safe("")
    if latest.number is None:
        return format_html("retrying, {}", earlier)
    return format_html("retrying: {}, {}", attempt_of_html(latest.number + 1, allowed), earlier)


def failure_label(attempt: FailedAttempt) -> SafeString:
    """ "attempt 1 failed: card declined" (no number when the counters cannot tell)."""
    reason = attempt.reason or "no reason recorded"
    if attempt.number is None:
        return format_html("an attempt failed: {}", reason)
    return format_html("attempt {} failed: {}", attempt.number, reason)


def event_detail(fields: Mapping[str, str]) -> str:
    """The one short detail worth a glance: reason, due time, progress, previous state."""
    if "failedReason" in fields:
        return first_line(codec.failure_reason(fields["failedReason"]), 200)
    if "delay" in fields:
        due = codec.integer(fields["delay"])
        return f"until {exact_time(due)}" if due is not None else fields["delay"][:100]
    if "data" in fields:
        return f"progress {fields['data'][:100]}"
    if "prev" in fields:
        return f"from {label(fields['prev'])}"
    if "count" in fields:
        return f"{fields['count']} jobs"
    if "attemptsMade" in fields:  # retries-exhausted: how many tries it had
        made = codec.integer(fields["attemptsMade"])
        if made is None:
            return fields["attemptsMade"][:100]
        return f"after {made:,} attempt{'' if made == 1 else 's'}"
    return fields.get("name", "")[:100]


class EventRow(TypedDict):
    """What the Events tab shows of an event beside its id, name and job: the
    values event_row_html places, and what the live feed gets to fill the same
    row in the page (static/dashboard/feed.js), so both come from event_row."""

    time: str  # exact UTC time, the cell's title; the cell shows [11:23]
    tone: str  # the badge's colour
    detail: str
    job_url: str | None  # None without a job
    # The job id as the job column shows it, only when that is not the id
    # itself (over 40 characters): every page gets every event's bytes.
    job_label: NotRequired[str]


def event_row(event: Event, job_prefix: str) -> EventRow:
    job_id = event.job_id
    row: EventRow = {
        "time": exact_time(event.timestamp_ms),
        "tone": EVENT_TONES.get(event.event, "other"),
        "detail": event_detail(event.fields),
        "job_url": job_url(job_prefix, job_id) if job_id else None,
    }
    if job_id and len(job_id) > 40:
        # Truncator counts combining accents as nothing: only a longer id can be cut.
        row["job_label"] = Truncator(job_id).chars(40)
    return row


# An event's row: the one markup of the pages' rows and, empty, of the events
# tab's <template> that the live feed fills (static/dashboard/feed.js).
_EVENT_ROW = (
    '<tr data-event-id="{id}" data-event="{name}"{job_attribute}>'
    '\n  <td class="time"><time title="{time}">{clock}</time></td>'
    '\n  <td><span class="badge state-{tone}">{name}</span></td>'
    '\n  {job_cell}  <td class="detail">{detail}</td>\n</tr>\n'
)
_JOB_CELL = '<td class="id">{link}</td>\n  '


def event_row_html(event: Event, job_prefix: str, *, one_job: bool = False) -> SafeString:
    """An event's row on the pages (``one_job``: without the job column).
    html.escape: any writer may put anything in an event."""
    esc = html.escape
    row = event_row(event, job_prefix)
    job_id = event.job_id
    link = ""
    if job_id and row["job_url"] is not None:
        link = f'<a href="{esc(row["job_url"])}">{esc(row.get("job_label", job_id))}</a>'
    return mark_safe(  # noqa: S308 - every value in it is escaped or made of safe characters
        _EVENT_ROW.format(
            id=esc(event.stream_id),
            name=esc(event.event),
            job_attribute=f' data-job-id="{esc(job_id)}"' if job_id else "",
            time=row["time"],
            clock=row["time"][11:23],
            tone=row["tone"],
            job_cell="" if one_job else _JOB_CELL.format(link=link),
            detail=esc(row["detail"]),
        )
    )


# The row the live feed clones and fills: the same markup, every value empty.
EVENT_ROW_TEMPLATE = mark_safe(  # noqa: S308 - no value in it
    _EVENT_ROW.format_map(defaultdict(str, job_cell=_JOB_CELL.format(link="")))
)
