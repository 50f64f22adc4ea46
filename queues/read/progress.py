"""A job's ``progress`` field as the dashboard draws it (rows, job page, API).

The progress shapes drawn as a bar; every other value is shown as (short)
JSON. A number is a percent. An object is counted work when it holds one key
of each tuple below, both numbers, the total above zero: {"step": 1, "of": 5},
{"current": 3, "total": 8}, {"done": 2, "total": 4}, {"value": 30, "max": 120}...
(docs/pages.md lists them under "Progress").
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from queues.read.answers import ProgressBar

PROGRESS_DONE_KEYS = ("step", "current", "done", "completed", "processed", "value")
PROGRESS_TOTAL_KEYS = ("of", "total", "max")


def _finite_number(value: Any) -> float | None:
    # JSON from other writers may hold NaN or Infinity (Python's json accepts
    # them): no bar can be drawn from those.
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return float(value) if math.isfinite(value) else None


@dataclass(frozen=True, slots=True)
class Progress:
    """A job's progress as the dashboard draws it: ``percent`` fills a bar
    (None: not a known shape, shown as JSON); ``done`` of ``total`` is set for
    counted work, None for a plain percent."""

    value: Any
    percent: int | None = None
    done: int | float | None = None
    total: int | float | None = None

    @property
    def counted(self) -> bool:
        return self.total is not None

    def as_json(self) -> ProgressBar | None:
        if self.percent is None:
            return None
        return ProgressBar(percent=self.percent, done=self.done, total=self.total)


def read_progress(value: Any) -> Progress:
    """The one decoder of the ``progress`` field (rows, job page, JSON API)."""
    number = _finite_number(value)
    if number is not None:
        return Progress(value, percent=max(0, min(100, int(number))))
    if not isinstance(value, dict):
        return Progress(value)
    done_key = next((key for key in PROGRESS_DONE_KEYS if key in value), None)
    total_key = next((key for key in PROGRESS_TOTAL_KEYS if key in value), None)
    if done_key is None or total_key is None:
        return Progress(value)
    done, total = _finite_number(value[done_key]), _finite_number(value[total_key])
    if done is None or total is None or done < 0 or total <= 0:
        return Progress(value)
    percent = max(0, min(100, int(100 * done / total)))
    return Progress(value, percent, value[done_key], value[total_key])
