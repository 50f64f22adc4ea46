"""How long a failed job waits before its next attempt.

The job's ``opts.backoff`` is either a bare number (fixed delay, ms) or
``{"type": "fixed" | "exponential", "delay": ms, "jitter": 0..1}``. The delay is
computed here, by the runtime, and handed to moveToDelayed:

- fixed: ``delay``
- exponential: ``2 ** (attempt - 1) * delay`` rounded half up, where ``attempt`` is the
  number of attempts made so far, the failed one included (1 after the first)
- jitter ``j``: a value drawn uniformly from ``[base * (1 - j), base]``

Everything here is pure; the random source is a parameter so tests can pin it.
"""

from __future__ import annotations

import math
import random
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Literal

BackoffType = Literal["fixed", "exponential"]
_TYPES: frozenset[str] = frozenset({"fixed", "exponential"})
# Beyond 2**52 ms the delay means "never" in practice, and floats stop being exact.
MAX_DELAY_MS = 2**52


class UnknownBackoffType(ValueError):
    """``opts.backoff.type`` names a strategy this runtime does not have."""

    def __init__(self, kind: object) -> None:
        self.kind = kind
        super().__init__(f"unknown backoff type {kind!r} (known: exponential, fixed)")


@dataclass(frozen=True, slots=True)
class Backoff:
    kind: BackoffType
    delay_ms: float
    jitter: float = 0.0

    def delay_for(self, attempt: int, rand: Callable[[], float] = random.random) -> int:
        """The wait (ms) after ``attempt`` attempts have been made (``attempt >= 1``)."""
        base = self.delay_ms
        if self.kind == "exponential":
            # Any exponent past 200 is capped below anyway; clamping avoids OverflowError.
            base = math.ldexp(base, min(max(attempt, 1) - 1, 200))
        base = min(base, float(MAX_DELAY_MS))
        if self.jitter > 0:
            # rand() is in [0, 1): the result is in [base * (1 - jitter), base].
            base -= base * self.jitter * rand()
        # Half up, as JavaScript's Math.round does (Python's round() is half-even).
        return math.floor(base + 0.5)


def _number(value: object) -> float | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, int | float):
        return float(value) if math.isfinite(value) else None
    if isinstance(value, str):
        try:
            parsed = float(value)
        except ValueError:
            return None
        return parsed if math.isfinite(parsed) else None
    return None


def parse_backoff(spec: Any) -> Backoff | None:
    """The backoff described by ``opts.backoff``; ``None`` when there is none.

    Malformed delays or jitters count as 0 (a job written by another runtime
    must still be retried); an unknown ``type`` raises :class:`UnknownBackoffType`.
    """
    if spec is None or spec is False:
        return None
    bare = _number(spec)
    if bare is not None:
        return Backoff("fixed", min(max(0.0, bare), MAX_DELAY_MS))
    if not isinstance(spec, Mapping):
        return None
    kind = spec.get("type", "fixed")
    if kind not in _TYPES:
        raise UnknownBackoffType(kind)
    delay = _number(spec.get("delay")) or 0.0
    jitter = _number(spec.get("jitter")) or 0.0
    return Backoff(
        "exponential" if kind == "exponential" else "fixed",
        min(max(0.0, delay), MAX_DELAY_MS),
        min(max(jitter, 0.0), 1.0),
    )


def retry_delay(spec: Any, attempts_made: int, rand: Callable[[], float] = random.random) -> int:
    """The delay (ms) before the next attempt; 0 when the job has no backoff."""
    backoff = parse_backoff(spec)
    return 0 if backoff is None else backoff.delay_for(attempts_made, rand)
