"""JSON and text in and out of Redis: tolerant when reading, strict when writing.

A real keyspace holds fields from BullMQ of several versions, hand edits and
plain garbage; readers must show what they can and never raise. These helpers
turn raw bytes into text, numbers and JSON, falling back instead of failing.
What this runtime writes goes through one encoder, ``dumps``, which refuses
what other readers could not parse.
"""

from __future__ import annotations

import json
import math
import re
from typing import Any, cast

import rapidjson

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


# One encoder for every JSON field this runtime writes (a job's data, options,
# progress, return value and stack traces; the dashboard's own records), built
# once. The standard library's public API (json.JSONEncoder.encode) builds a
# fresh C encoder on every call: in a bulk add of 50,000 tiny jobs the Python
# process then spent 7.0-7.8 us of CPU per job against 5.7-5.9 with this one
# (docs/benchmarks.md, bench/json_encoding.py). NM_NONE refuses NaN and
# Infinity, which JSON has no words for: BullMQ's JSON.parse throws on them,
# and encoders that write null instead would change the value. The other modes
# keep what json.dumps does: bytes are refused, int and float keys become strings.
_ENCODER = rapidjson.Encoder(
    ensure_ascii=False,
    number_mode=rapidjson.NM_NONE,
    bytes_mode=rapidjson.BM_NONE,
    mapping_mode=rapidjson.MM_COERCE_KEYS_TO_STRINGS,
)
# What dumps raises for a value JSON cannot say (NaN, a set, a loop, a lone surrogate).
UNENCODABLE = (TypeError, ValueError, OverflowError, RecursionError)


def dumps(value: Any) -> str:
    """Compact JSON, as BullMQ writes it (no spaces, unicode kept); raises one of
    ``UNENCODABLE`` for NaN, Infinity and whatever else is not JSON."""
    # Without a stream to write to, the encoder returns the text.
    return cast(str, _ENCODER(value))


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
