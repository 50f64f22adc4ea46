"""A queue's limits: global concurrency, the global rate limit, and whether
it is rate-limited right now.

BullMQ 5.x keeps them in the queue's ``meta`` hash (docs/protocol.md, Keys):
``concurrency`` caps the jobs active at once across all workers; ``max`` jobs
per ``duration`` ms is the rate limit; the ``limiter`` string counts the jobs
started in the current window and expires when the window ends. Workers may
also carry a rate limit of their own (not stored): the window's count and
end are shown then too, but "rate-limited" is only claimed against a stored
``max``, exactly as our moveToActive decides it (includes/takeNextJob.lua).

Any writer may leave anything in these fields: what is not a number is shown
as it is stored, as no limit (our workers read it so; BullMQ's moveToActive
fails on a non-numeric ``concurrency``, which the page says).
One pipelined round trip, whatever the queue holds.
"""

from __future__ import annotations

import math
import re
import time
from dataclasses import dataclass
from typing import Any

from redis import Redis
from redis.exceptions import ResponseError

from queues import codec
from queues.read import answers
from queues.read.refs import QueueRef

# A finite decimal number, as Lua's tonumber reads it in the workers' scripts
# (spaces around it and exponents included; "inf", "nan" are no number, and
# the rare hexadecimal "0x1f" is taken as garbage here).
_DECIMAL = re.compile(r"\s*-?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?\s*\Z")
# What the page shows of a stored value that is not a number.
MAX_RAW_SHOWN = 100


def _number(raw: Any) -> float | None:
    text = codec.text(raw)
    # Length first: a number is short, and the pattern need not meet 10 MB.
    if text is None or len(text) > 64 or not _DECIMAL.match(text):
        return None
    number = float(text)
    return number if math.isfinite(number) else None


def _whole(number: float | None) -> int | float | None:
    if number is not None and number.is_integer():
        return int(number)
    return number


def _raw(raw: Any) -> str | None:
    text = codec.text(raw)
    return None if text is None else text[:MAX_RAW_SHOWN]


@dataclass(frozen=True, slots=True)
class Limits:
    """What limits the queue. ``*_raw`` is the stored text (None when not
    set); the number beside it is None when that text sets no limit."""

    ref: QueueRef
    concurrency: int | float | None
    concurrency_raw: str | None
    rate_max: int | float | None
    rate_duration_ms: int | float | None
    rate_max_raw: str | None
    rate_duration_raw: str | None
    active: int
    window_count: int | None  # jobs started in the current window; None: no window
    window_left_ms: int  # until the window ends; 0 when none
    rate_limited_ms: int  # > 0: no job starts for this long
    read_at_ms: int
    # Set when the meta hash or the limiter has the wrong type.
    problem: str | None = None

    @property
    def concurrency_garbage(self) -> bool:
        return self.concurrency_raw is not None and self.concurrency is None

    @property
    def rate_garbage(self) -> bool:
        stored = self.rate_max_raw is not None or self.rate_duration_raw is not None
        return stored and self.rate_max is None

    @property
    def rate_limited_until_ms(self) -> int | None:
        return self.read_at_ms + self.rate_limited_ms if self.rate_limited_ms > 0 else None

    def as_json(self) -> answers.Limits:
        return answers.Limits(
            queue=self.ref.qualified,
            global_concurrency=self.concurrency,
            global_concurrency_stored=self.concurrency_raw,
            active=self.active,
            rate_limit=None
            if self.rate_max is None or self.rate_duration_ms is None
            else answers.RateLimit(max=self.rate_max, duration_ms=self.rate_duration_ms),
            rate_limit_stored=None
            if self.rate_max_raw is None and self.rate_duration_raw is None
            else answers.StoredRateLimit(max=self.rate_max_raw, duration=self.rate_duration_raw),
            window=None
            if self.window_count is None
            else answers.Window(started=self.window_count, ends_in_ms=self.window_left_ms),
            rate_limited_ms=self.rate_limited_ms,
            rate_limited_until=self.rate_limited_until_ms,
            read_at=self.read_at_ms,
            problem=self.problem,
        )


def _rate_limit(max_raw: Any, duration_raw: Any) -> tuple[int | float | None, int | float | None]:
    """The stored rate limit when it is one a worker applies (both numbers,
    each at least 1: includes/takeNextJob.lua's limiter_settings)."""
    most, duration = _number(max_raw), _number(duration_raw)
    if most is None or duration is None or most < 1 or duration < 1:
        return None, None
    return _whole(most), _whole(float(int(duration)))


def read_limits(client: Redis, ref: QueueRef) -> Limits:
    keys = ref.keys
    pipe = client.pipeline(transaction=False)
    pipe.hmget(keys.meta, ["concurrency", "max", "duration"])
    pipe.llen(keys.active)
    pipe.get(keys.limiter)
    pipe.pttl(keys.limiter)
    meta, active, count_raw, ttl = pipe.execute(raise_on_error=False)
    now = int(time.time() * 1000)
    problems = []
    if isinstance(meta, ResponseError):
        problems.append(f"the key {keys.meta} is not a hash")
        meta = [None, None, None]
    if isinstance(active, ResponseError):
        problems.append(f"the key {keys.active} is not a list")
        active = 0
    if isinstance(count_raw, ResponseError):
        problems.append(f"the key {keys.limiter} is not a string")
        count_raw, ttl = None, -2
    concurrency = _number(meta[0])
    rate_max, rate_duration = _rate_limit(meta[1], meta[2])
    count = _number(count_raw)
    left = ttl if isinstance(ttl, int) and ttl > 0 else 0
    limited = left if rate_max is not None and count is not None and count >= rate_max else 0
    return Limits(
        ref=ref,
        concurrency=_whole(concurrency),
        concurrency_raw=_raw(meta[0]),
        rate_max=rate_max,
        rate_duration_ms=rate_duration,
        rate_max_raw=_raw(meta[1]),
        rate_duration_raw=_raw(meta[2]),
        active=int(active),
        window_count=None if count is None else int(count),
        window_left_ms=left,
        rate_limited_ms=limited,
        read_at_ms=now,
        problem="; ".join(problems) or None,
    )
