"""The schedulers tab's table rows, built in Python like the job table's (a template
loop was 73% of the tab's time at 50 rows: docs/benchmarks.md, "Runs of 2026-12-01,
evening"). Every value read from Redis is escaped once; the pending runs' URLs
are one reverse() per page (presenters.job_url_prefix).
"""

from __future__ import annotations

from django.utils.html import escape
from django.utils.safestring import SafeString, mark_safe

from dashboard.shared import presenters
from dashboard.shared.formatting import thousands
from queues.read.schedulers import SchedulerPage, SchedulerRow, template_preview

_DUE = '<span title="No worker has taken this run yet">due</span> '
_NONE = '<span class="muted">—</span>'
_NO_NAME = '<span class="muted">no name</span>'
_LINE = "\n    "
_OPTS = '\n    <div class="muted preview" title="template options">opts <code>'


def rows_html(page: SchedulerPage, *, can_act: bool, now_ms: int) -> SafeString:
    """The page's ``<tr>``s; ``can_act`` adds each row's run-now and remove buttons."""
    prefix = presenters.job_url_prefix(page.ref)
    rows = [_row_html(row, prefix, can_act, now_ms, number) for number, row in enumerate(page.rows)]
    return mark_safe("".join(rows))  # noqa: S308 - every value read is escaped in _row_html


def _row_html(row: SchedulerRow, job_prefix: str, can_act: bool, now_ms: int, number: int) -> str:
    scheduler_id = escape(row.scheduler_id)
    name = escape(row.name) if row.name else ""
    broken = ' class="broken"' if row.notes else ""
    badge = "badge-muted" if row.is_legacy else "badge-scheduler"
    pending = row.pending_job_id  # a property that builds and checks the id: read once
    notes = ""
    if row.notes:
        items = "".join(f"<li><strong>Broken:</strong> {escape(note)}</li>" for note in row.notes)
        notes = f'<ul class="notes">{items}</ul>'
    schedule = [
        f"<code>{escape(row.schedule)}</code>"
        if row.schedule
        else '<span class="muted">unreadable</span>'
    ]
    if row.tz:
        schedule.append(f'<span class="muted">{escape(row.tz)}</span>')
    for word, at in (("from", row.start_ms), ("until", row.end_ms)):
        if at is not None:
            schedule.append(f'<div class="muted">{word} {presenters.exact_time(at)}</div>')
    runs = _NONE if row.iterations is None else thousands(row.iterations)
    if row.limit is not None:
        runs += f' <span class="muted">of {thousands(row.limit)}</span>'
    next_run = _next_run_html(row, pending, job_prefix, now_ms)
    opts = template_preview(row.opts)
    opts = "" if opts == "{}" else f"{_OPTS}{escape(opts)}</code></div>"
    return (
        f'<tr data-job-id="{scheduler_id}"{broken}>\n'
        f'  <td class="scheduler-id">\n'
        f'    <code class="id" title="{scheduler_id}">{scheduler_id}</code>\n'
        f'    <span class="badge {badge}">{row.kind}</span>\n'
        f"    {notes}\n"
        f"  </td>\n"
        f'  <td class="schedule">{_LINE.join(schedule)}</td>\n'
        f'  <td class="when" data-label="next">{next_run}</td>\n'
        f'  <td class="runs" data-label="iterations">{runs}</td>\n'
        f'  <td class="template"><span class="template-name">{name or _NO_NAME}</span>\n'
        f'    <code class="preview" title="template data">{escape(template_preview(row.data))}'
        f"</code>{opts}</td>\n"
        f"{_actions_html(row, scheduler_id, name, pending, number) if can_act else ''}"
        "</tr>\n"
    )


def _next_run_html(row: SchedulerRow, pending: str | None, job_prefix: str, now_ms: int) -> str:
    due = row.next_run_ms
    if due is None:
        return _NONE
    exact = presenters.exact_time(due)
    html = (
        f'{_DUE if due < now_ms else ""}<time title="{exact}">'
        f"{presenters.relative_time(due, now_ms)}</time>\n"
        f'    <div class="muted">{exact}</div>'
    )
    if pending:
        url = presenters.job_url(job_prefix, pending)
        html += f'\n    <a href="{escape(url)}">pending run</a>'
    return html


def _actions_html(
    row: SchedulerRow, scheduler_id: str, name: str, pending: str | None, number: int
) -> str:
    """Run now and remove: each submits the form above the table named by its
    ``form`` attribute, with the scheduler's id as its value (the id and the
    name come escaped). A run now that cannot run says why under the buttons,
    where the operator looks, and the button is described by those words (a
    tooltip alone reaches neither a phone nor a keyboard). The row's number
    makes the words' id: a scheduler id may hold spaces, which an id may not."""
    job = name or "job"
    refused = why = ""
    if not row.can_run_now:
        reason = (
            "Cannot run now: a legacy repeatable keeps no template"
            if row.is_legacy
            else "Cannot run now: its definition is broken (see the note)"
        )
        why_id = f"run-now-why-{number}"
        refused = f' disabled aria-describedby="{why_id}"'
        why = f'    <div class="muted why-disabled" id="{why_id}">{reason}</div>\n'
    run = f" {escape(pending)}" if pending else ""
    return (
        '  <td class="row-actions">\n'
        f'    <button type="submit" form="scheduler-run_now" name="id" value="{scheduler_id}"'
        f' class="btn" data-confirm="Run {scheduler_id} now? A {job} job is added from its'
        ' template and runs at once; the schedule and its next run stay as they are."'
        f"{refused}>Run now…</button>\n"
        f'    <button type="submit" form="scheduler-remove" name="id" value="{scheduler_id}"'
        f' class="btn btn-danger" data-confirm="Remove job scheduler {scheduler_id}? It stops'
        f" for good, and its pending run{run} is deleted unless a worker has taken it."
        ' Cannot be undone.">Remove…</button>\n'
        f"{why}"
        "  </td>\n"
    )
