"""Tolerant decoding of what other writers left in Redis.

A real keyspace holds fields from BullMQ of several versions, hand edits and
plain garbage; readers must show what they can and never raise. These helpers
turn raw bytes into text, numbers and JSON, falling back instead of failing.
"""

from __future__ import annotations

import json
import math
import re
from typing import Any

_MISSING = object()
# Half a character: JSON lets a writer escape one ("\\ud800"), json.loads
# keeps it, and no UTF-8 text (a page, an answer, Redis) can hold it.
_LONE_SURROGATE = re.compile("[\ud800-\udfff]")


def text(raw: bytes | str | None) -> str | None:
    """UTF-8 text; invalid bytes become U+FFFD instead of an error."""
    if raw is None:
        return None
    if isinstance(raw, str):
        return raw
    return raw.decode("utf-8", errors="replace")


def printable(text: str) -> str:
    """``text`` fit for a page or an answer: each half character (only JSON
    text decodes to one) becomes U+FFFD, as invalid UTF-8 does in :func:`text`."""
    return _LONE_SURROGATE.sub("\ufffd", text)


def integer(raw: bytes | str | int | None, default: int | None = None) -> int | None:
    """An integer field ("12", "12.0", b"12"); ``default`` when absent or malformed."""
    if raw is None:
        return default
    if isinstance(raw, int):
        return raw
    try:
        value = raw.decode() if isinstance(raw, bytes) else raw
        return int(value)
    except (ValueError, UnicodeDecodeError):
        try:
            return int(float(value))
        except (ValueError, OverflowError, UnboundLocalError):
            return default


# Scores are doubles, and another writer may leave +inf or 1e300 there (a
# finish time no clock wrote): as whole milliseconds they are clamped to the
# integers a double holds exactly.
SCORE_LIMIT = 2**53


def score_ms(score: float) -> int:
    """A sorted set's score (a time, mostly) as whole milliseconds, within
    +-SCORE_LIMIT: +-inf and anything beyond become the limit."""
    if math.isnan(score):
        return 0
    if math.isinf(score) or abs(score) >= SCORE_LIMIT:
        return SCORE_LIMIT if score > 0 else -SCORE_LIMIT
    return int(score)


def loads(raw: bytes | str | None, default: Any = None) -> Any:
    """Parsed JSON, or ``default`` when absent or not JSON."""
    if raw is None:
        return default
    try:
        return json.loads(raw)
    except (ValueError, UnicodeDecodeError, RecursionError):
        return default


def dumps(value: Any) -> str:
    """Compact JSON, as BullMQ writes it (no spaces, unicode kept)."""
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False)


def is_json(raw: bytes | str | None) -> bool:
    return raw is not None and loads(raw, _MISSING) is not _MISSING


def failure_reason(raw: bytes | str | None) -> str | None:
    """A failedReason as text. bullmq's Python port stores it JSON-encoded
    (``"boom"`` with the quotes); such a value is shown unquoted."""
    value = text(raw)
    if value and len(value) >= 2 and value[0] == value[-1] == '"':
        decoded = loads(value)
        if isinstance(decoded, str):
            return printable(decoded)
    return value
