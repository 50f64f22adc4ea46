"""Fold a failure reason into the text its whole kind of failure shares.

"timeout after 30012 ms on job 991" and "timeout after 30401 ms on job 12"
are one problem to the on-call engineer; the numbers, ids, quoted values and
paths inside a reason differ per job. :func:`fold` replaces each of them by a
placeholder; :func:`group_key` names the folded text in a few bytes (the error
groups index, ``queues.read.error_groups``, keys its groups by it), and
:func:`fold_field` gives both for a raw failedReason field. Pure: no
Redis, no Django, so the rules are tested as a table (tests/test_error_folding.py).
"""

from __future__ import annotations

import hashlib
import re
from functools import lru_cache

from queues import codec
from queues.read.failures import first_line

# The longest folded text kept: enough to tell two errors apart on a screen.
MAX_FOLDED = 500
# The most characters of a reason's first line folding reads: placeholders
# shorten what they replace, so a little more than MAX_FOLDED, never a whole
# megabyte of a reason.
FOLD_READS = 4 * MAX_FOLDED
# The bytes of a failedReason field folding needs at most: FOLD_READS
# characters of UTF-8, four bytes each at most. The error groups index reads
# no more of any reason (priv/scripts/failedReasons-1.lua cuts each there:
# 500 reasons of a megabyte made one reply of 500 MB), and fold_field cuts
# every field the same way, so a job's group never depends on which way its
# reason was read.
REASON_BYTES = 4 * FOLD_READS
# A JSON escape is at most this long (a surrogate pair, "\ud83d\ude00").
_LONGEST_ESCAPE = 12
NO_REASON = "(no reason given)"

# Applied in order: a rule comes before another that would eat part of its
# match (a uuid is hex and digits; a URL holds a path; a path may hold
# numbers). Each rule names the characters its matches must contain, and is
# skipped (a substring test in C) when the text has none of them: folding is
# most of the first grouping's time, and most reasons hold no quote, URL,
# uuid or path (bench/search.py: 3x faster than every rule on every text).
_Rule = tuple[re.Pattern[str], str, tuple[str, ...]]
_RULES: tuple[_Rule, ...] = (
    # Quoted values: 'user 42', "a.b", `x` -- whatever is quoted is data.
    (
        re.compile(r"\"(?:[^\"\\]|\\.)*\"|'(?:[^'\\]|\\.)*'|`[^`]*`"),
        "<str>",
        ('"', "'", "`"),
    ),
    (re.compile(r"\b[a-z][a-z0-9+.-]*://\S+", re.IGNORECASE), "<url>", ("://",)),
    (
        re.compile(r"\b[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\b", re.I),
        "<uuid>",
        ("-",),
    ),
    # Unix paths (two segments or more, or one with a dot: /tmp/x, /app.py)
    # and Windows paths (C:\x\y).
    (
        re.compile(
            r"(?<![\w/])(?:~|\.{1,2})?(?:/[\w.@~+%-]+){2,}/?"
            r"|(?<![\w/])/[\w@~+%-]*\.[\w.@~+%-]+"
            r"|\b[a-z]:\\(?:[^\\\s]+\\)*[^\\\s]*",
            re.IGNORECASE,
        ),
        "<path>",
        ("/", "\\"),
    ),
    (re.compile(r"\b0x[0-9a-f]+\b", re.IGNORECASE), "<hex>", ("0x", "0X")),
    # Bare hex ids (object ids, hashes): eight or more hex digits holding at
    # least one digit and one letter, so plain words ("deadbeef" aside) stay.
    (
        re.compile(r"\b(?=[0-9a-f]*\d)(?=[0-9a-f]*[a-f])[0-9a-f]{8,}\b", re.IGNORECASE),
        "<hex>",
        (),
    ),
    # Numbers, also inside words (job991, worker3) and with decimals or
    # thousands separators (30,012 and 30.5 are one number each).
    (re.compile(r"\d+(?:[.,]\d+)*"), "<n>", ()),
)


# Each rule with its precheck as one compiled search (a C call) instead of a
# Python loop over the substrings: None for the rules that always run.
_CHECKED_RULES = tuple(
    (
        pattern,
        placeholder,
        re.compile("|".join(re.escape(part) for part in needs)).search if needs else None,
    )
    for pattern, placeholder, needs in _RULES
)
# Distinct first lines folded lately: a queue's failures often repeat one
# reason word for word ("Connection refused"), and grouping 100,000 of them
# then folds each once. Bounded: entries of at most 4 * MAX_FOLDED characters.
_CACHED_LINES = 1024


def fold(reason: str | None) -> str:
    """The folded first line of ``reason`` (NO_REASON when it has none)."""
    return _fold_line(first_line(reason, limit=FOLD_READS))


@lru_cache(maxsize=_CACHED_LINES)
def _fold_line(text: str) -> str:
    for pattern, placeholder, applies in _CHECKED_RULES:
        if applies is None or applies(text):
            text = pattern.sub(placeholder, text)
    return " ".join(text.split())[:MAX_FOLDED] or NO_REASON


# Every ASCII digit read as "1". The rules treat all digits alike (``\d``,
# ``[0-9a-f]``, ``\w``; every digit left over becomes ``<n>``, so none reaches
# the folded text) save the "0" of "0x": two reasons that differ only in
# their digits fold the same unless one holds "0x". Reasons mostly differ
# per job in numbers ("timeout after 30012 ms on job 991"): a field read in
# this form folds once per kind and length of its numbers, not once per job
# (bench/grouping.py: 100,000 reasons are 432 such forms; folding took most
# of the first grouping's dashboard CPU, about 20 us a job).
_ONE_DIGIT = bytes.maketrans(b"0123456789", b"1111111111")
# Longer fields are folded as they come (their first line is cached by
# _fold_line): the cache holds at most _CACHED_LINES keys of this size.
_CACHED_FIELD_BYTES = 4 * MAX_FOLDED


def fold_field(raw: bytes | str | None) -> tuple[str, str]:
    """The group key and the folded text of a failedReason field as Redis
    answers it, decoded as the job decoder decodes it (codec.failure_reason),
    its first REASON_BYTES only."""
    if isinstance(raw, str):
        raw = raw.encode("utf-8", "replace")
    if raw is not None and len(raw) >= REASON_BYTES:
        # Read cut or whole, the same bytes: one of exactly REASON_BYTES may
        # be one the index's first count read cut.
        return _keyed(fold(_cut_reason(raw[:REASON_BYTES])))
    if (
        isinstance(raw, bytes)
        and len(raw) <= _CACHED_FIELD_BYTES
        # JSON-quoted (bullmq's Python port), an escape ("\u0031") holds
        # digits that are not digits of the text; without a backslash the
        # quoted text is its own bytes, digits and all.
        and not (raw.startswith(b'"') and b"\\" in raw)
        and b"0x" not in raw
        and b"0X" not in raw
    ):
        # An ASCII digit is one byte that no UTF-8 sequence holds, so the
        # digits read as "1" decode to the same text with its digits as "1".
        return _fold_field(raw.translate(_ONE_DIGIT))
    return _keyed(fold(codec.failure_reason(raw)))


def _cut_reason(head: bytes) -> str:
    """The text of a failedReason cut at REASON_BYTES. One that bullmq's
    Python port JSON-quoted has lost its closing quote (and maybe half an
    escape): decoded from its whole escapes, as its uncut siblings are, so
    that it folds with them and not into a group of its own raw JSON."""
    text = codec.text(head) or ""
    if not text.startswith('"'):
        return text
    body = text[1:]
    for trim in range(_LONGEST_ESCAPE + 1):
        decoded = codec.loads(f'"{body[: len(body) - trim]}"')
        if isinstance(decoded, str):
            return decoded
    return text


@lru_cache(maxsize=_CACHED_LINES)
def _fold_field(raw: bytes) -> tuple[str, str]:
    return _keyed(fold(codec.failure_reason(raw)))


def _keyed(folded: str) -> tuple[str, str]:
    return group_key(folded), folded


@lru_cache(maxsize=_CACHED_LINES)
def group_key(folded: str) -> str:
    """A short stable name for a folded text: 16 hex digits of its SHA-1
    (64 bits: a collision among a few hundred groups is out of reach)."""
    return hashlib.sha1(folded.encode(), usedforsecurity=False).hexdigest()[:16]
