"""A job's failures for display: the one-line reason and every failed attempt."""

from __future__ import annotations

from dataclasses import dataclass

from queues.job import Job
from queues.read.answers import FailedAttempt as FailedAttemptAnswer


def first_line(text: str | None, limit: int = 300) -> str:
    """The first non-empty line of a failure reason, for one-line displays."""
    lines = (text or "").strip().splitlines()
    return lines[0][:limit] if lines else ""


@dataclass(frozen=True, slots=True)
class FailedAttempt:
    """One failed attempt of a job: its number (None when the job's counters
    cannot tell), the one-line reason and the stack trace ("" when none kept)."""

    number: int | None
    reason: str
    trace: str

    def as_json(self) -> FailedAttemptAnswer:
        return FailedAttemptAnswer(attempt=self.number, reason=self.reason, trace=self.trace)


def trace_reason(trace: str) -> str:
    """The line of a stack trace that says what went wrong: the last line of a
    Python traceback, the first line of a JavaScript stack ("Error: ...")."""
    lines = [line for line in trace.strip().splitlines() if line.strip()]
    if not lines:
        return ""
    line = lines[-1] if lines[0].startswith("Traceback (most recent call last)") else lines[0]
    return line.strip()[:300]


def failed_attempts(job: Job, state: str | None) -> list[FailedAttempt]:
    """Every failed attempt the job's hash remembers, latest first.

    ``stacktrace`` holds one entry per failed attempt, oldest first (capped by
    stackTraceLimit: the oldest go first); ``failedReason`` is the latest
    failure's reason (a retry by an admin clears it). Numbers count back from
    the latest attempt started or made: an active or completed job's latest
    attempt is not a failure, so its failures end one before it.
    """
    traces = job.stacktrace
    if not traces and not job.failed_reason:
        return []
    latest = max(job.attempts_started, job.attempts_made)
    last_failed = latest - 1 if state in ("active", "completed") else latest
    entries = list(reversed(traces)) or [""]
    attempts = []
    for back, trace in enumerate(entries):
        number = last_failed - back
        reason = first_line(job.failed_reason) if back == 0 and job.failed_reason else ""
        attempts.append(
            FailedAttempt(number if number >= 1 else None, reason or trace_reason(trace), trace)
        )
    return attempts
