"""Formatting for humans: numbers, times, durations, sparklines."""

from __future__ import annotations

import datetime as dt
import time
from collections.abc import Sequence
from typing import Any

from django import template
from django.urls import reverse

from queues.inspect import QueueRef

register = template.Library()


@register.filter
def thousands(value: Any) -> str:
    """1204331 -> "1,204,331"."""
    try:
        return f"{int(value):,}"
    except (TypeError, ValueError):
        return ""


@register.filter
def compact(value: Any) -> str:
    """1204331 -> "1.2M", 3200 -> "3.2k" (exact value belongs in a title)."""
    try:
        number = int(value)
    except (TypeError, ValueError):
        return ""
    for size, unit in ((1_000_000_000, "G"), (1_000_000, "M"), (1_000, "k")):
        if abs(number) >= size:
            return f"{number / size:.1f}".rstrip("0").rstrip(".") + unit
    return str(number)


@register.filter
def ms_datetime(value: Any) -> str:
    """Milliseconds since the epoch as an exact UTC time."""
    if not isinstance(value, int) or isinstance(value, bool):
        return ""
    try:
        moment = dt.datetime.fromtimestamp(value / 1000, tz=dt.UTC)
    except (OverflowError, OSError, ValueError):
        return str(value)
    return moment.strftime("%Y-%m-%d %H:%M:%S.%f")[:-3] + " UTC"


def _span(ms: int) -> str:
    seconds = abs(ms) / 1000
    if seconds < 1:
        return f"{abs(ms)} ms"
    if seconds < 60:
        return f"{seconds:.1f} s".replace(".0 s", " s")
    for size, unit in ((86_400, "d"), (3_600, "h"), (60, "min")):
        if seconds >= size:
            return f"{int(seconds // size)} {unit}"
    return f"{int(seconds)} s"


@register.filter
def ago(value: Any) -> str:
    """A timestamp (ms) relative to now: "3 min ago", "in 2 h"."""
    if not isinstance(value, int) or isinstance(value, bool):
        return "—"
    delta = int(time.time() * 1000) - value
    return f"{_span(delta)} ago" if delta >= 0 else f"in {_span(delta)}"


@register.simple_tag
def duration(start: Any, end: Any) -> str:
    """The time between two ms timestamps, or "" when either is missing."""
    if not isinstance(start, int) or not isinstance(end, int):
        return ""
    return _span(end - start)


@register.filter
def sparkline(points: Sequence[int], height: int = 20) -> str:
    """SVG polyline points for per-minute counts (width 2 per point)."""
    if not points:
        return ""
    top = max(max(points), 1)
    return " ".join(
        f"{index * 2},{height - round(value * height / top)}" for index, value in enumerate(points)
    )


@register.filter
def total(points: Sequence[int]) -> int:
    return sum(points)


@register.simple_tag
def queue_url(ref: QueueRef, view: str = "queue") -> str:
    return reverse(f"dashboard:{view}", args=[ref.prefix, ref.name])


@register.simple_tag
def job_url(ref: QueueRef, job_id: str) -> str:
    return reverse("dashboard:job", args=[ref.prefix, ref.name, job_id])


@register.filter
def get(mapping: dict[str, Any], key: str) -> Any:
    return mapping.get(key)


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
# The event that leads to each state shares its colour.
EVENT_STATE = {
    "added": "wait",
    "waiting": "wait",
    "delayed": "delayed",
    "active": "active",
    "progress": "active",
    "completed": "completed",
    "failed": "failed",
    "retries-exhausted": "failed",
    "stalled": "active",
    "waiting-children": "waiting-children",
    "paused": "paused",
}


@register.filter
def state_label(state: str | None) -> str:
    return STATE_LABELS.get(state or "", state or "unknown")


@register.filter
def event_state(event: str) -> str:
    return EVENT_STATE.get(event, "other")


@register.filter
def event_detail(fields: dict[str, str]) -> str:
    """The one short detail worth a glance: reason, due time, progress, previous state."""
    if "failedReason" in fields:
        return (fields["failedReason"].strip().splitlines() or [""])[0][:200]
    if "delay" in fields:
        due = fields["delay"]
        return f"until {ms_datetime(int(due))}" if due.isdigit() else due
    if "data" in fields:
        return f"progress {fields['data'][:100]}"
    if "prev" in fields:
        return f"from {state_label(fields['prev'])}"
    if "count" in fields:
        return f"{fields['count']} jobs"
    return fields.get("name", "")[:100]
