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
from collections.abc import Callable
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
# The rules' version, kept with the error groups index (queues/read/error_groups.py):
# an index counted by older rules is counted again, in the background. Raise
# it with every change of the rules that can move a reason to another group.
# 1: the rules before the version was kept (an index without one).
RULES_VERSION = 2
# A JSON escape is at most this long (a surrogate pair, "\ud83d\ude00").
_LONGEST_ESCAPE = 12
NO_REASON = "(no reason given)"

# Applied in order: a rule comes before another that would eat part of its
# match (a URL holds a path, a path holds ids, an id holds numbers), and the
# placeholders of earlier rules may sit inside a path. Each rule says when it
# can apply (substrings its matches contain, or a test) and is skipped when
# it cannot: folding is most of the first grouping's time (bench/grouping.py).
# Most rules begin with the character class their match starts with and
# check the character before it after that (``\d(?<![\w.]\d)``), not with a
# lookbehind: the regex engine then skips in C every position that cannot
# start a match (the date and address rules cost 3-4 times less so).
#
# Every rule treats all ASCII digits alike (``\d``, ``[0-9]``, never a range
# of digits or a literal one) save the "0" of "0x": fold_field relies on it.
#
# An id is told from a word by how it varies, never by a list of words: a
# run of letters and digits that mixes both (twelve characters or more, or
# three runs or more: a1b2c, d3587f749c), eight hex digits or more with a
# letter and a digit, eight characters or more after a lower-case prefix
# and "_" or "-" that hold a digit or are hex (ord_d3587f749c, also when it
# came out all letters, TypeIDs, i-0abc...) or mix both cases (Stripe's
# cus_NffrFeUfNVbHib; sixteen or more after "-", which also joins the
# words of headers: X-RateLimit-Remaining), standard base64 of twenty
# characters or more. A word a person wrote (letters only, or letters then a
# number: E11000, sha256, worker3) is kept, its number folded.
_ALNUM = "A-Za-z0-9"
_MONTH = r"(?:Jan|Feb|Mar|Apr|May|Jun|Jul|Aug|Sep|Oct|Nov|Dec)[a-z]{0,6}"
# A month or a weekday whose capital was matched already.
_MONTH_REST = (
    r"(?:(?<=J)an|(?<=F)eb|(?<=M)ar|(?<=A)pr|(?<=M)ay|(?<=J)un|(?<=J)ul|(?<=A)ug|(?<=S)ep"
    r"|(?<=O)ct|(?<=N)ov|(?<=D)ec)[a-z]{0,6}"
)
_WEEKDAY_REST = r"(?:(?<=M)on|(?<=T)ue|(?<=W)ed|(?<=T)hu|(?<=F)ri|(?<=S)at|(?<=S)un)[a-z]{0,6}"
_CLOCK = r"\d{1,2}:\d{2}(?::\d{2}(?:[.,]\d{1,9})?)?"
_CLOCK_REST = r"\d?:\d{2}(?::\d{2}(?:[.,]\d{1,9})?)?"  # its first digit matched already
# "May 17, 2024, 10:42:13 AM", "May 17 10:42:13 2024", "Jun 27 2024 23:36:53
# GMT-0700 (Pacific Daylight Time)": what follows a month's name.
_AFTER_MONTH = (
    rf"\s+\d{{1,2}}(?:,?\s\d{{4}})?(?:,?\s{_CLOCK}(?:\s?[AP]M)?(?:\s\d{{4}})?"
    rf"(?:\s(?:GMT|UTC)(?:[+-]\d{{4}})?(?:\s\([\w ]+\))?)?)?"
)
_DAY_MONTH_YEAR = rf"[\s-]{_MONTH}[\s-]\d{{4}}(?:\s{_CLOCK}(?:\s(?:GMT|UTC|[+-]\d{{4}}))?)?"
_UNIT = "(?:ns|us|µs|ms|s|m|h|d)"


def _ipv6_possible(text: str) -> bool:
    return "::" in text or text.count(":") >= 7


_QUOTED = re.compile(r"\"(?:[^\"\\]|\\.)*\"|'(?:[^'\\]|\\.)*'|`[^`]*`")
# What stands before an exception's message that Python quotes: its class's
# parentheses (NewConnectionError('...')) or an error code's tuple
# ((2013, 'Lost connection ...'), every error of pymysql).
_MESSAGE_OPENER = re.compile(r"\((?:\d+,\s?)?\Z")


def _quoted(match: re.Match[str]) -> str:
    """A quoted value is data ('user 42', "a.b", `x`) and folds to <str>,
    save an exception's message in Python's quotes: its words tell the kind
    (folded all alike, pymysql's errors would be one kind), so it is read
    as text, its own quoted values folded."""
    if _MESSAGE_OPENER.search(match.string, max(0, match.start() - 16), match.start()):
        quoted = match.group()
        return quoted[0] + _QUOTED.sub(_quoted, quoted[1:-1]) + quoted[-1]
    return "<str>"


_Replacement = str | Callable[[re.Match[str]], str]
_Rule = tuple[re.Pattern[str], _Replacement, tuple[str, ...] | Callable[[str], bool]]
_RULES: tuple[_Rule, ...] = (
    (_QUOTED, _quoted, ('"', "'", "`")),
    (re.compile(r"\b[a-z][a-z0-9+.-]*://\S+", re.IGNORECASE), "<url>", ("://",)),
    # AWS resource names: account, region and resource (a role session, an
    # object key) vary together.
    (re.compile(r"(?<![\w-])arn:aws[\w-]*:[\w-]+:[\w-]*:\d*:[\w+=,.@/:*-]+"), "<arn>", ("arn:",)),
    (
        re.compile(
            r"(?<![\w.%+-])[\w.%+-]+@[A-Za-z0-9](?:[A-Za-z0-9-]*[A-Za-z0-9])?"
            r"(?:\.[A-Za-z0-9](?:[A-Za-z0-9-]*[A-Za-z0-9])?)*\.[A-Za-z]{2,}\b"
        ),
        "<email>",
        ("@",),
    ),
    # Dates and times in the common written forms, whose names of days and
    # months vary with the date. First those that start with a name: HTTP's
    # "Fri, 17 May 2024 10:42:13 GMT", JavaScript's Date string, ctime,
    # "May 17, 2024" ...
    (
        re.compile(
            rf"[A-Z](?<![\w:.][A-Z])(?:"
            rf"{_WEEKDAY_REST},?\s(?:\d{{1,2}}{_DAY_MONTH_YEAR}|{_MONTH}{_AFTER_MONTH})"
            rf"|{_MONTH_REST}{_AFTER_MONTH}"
            rf")(?![\w:])"
        ),
        "<time>",
        (),
    ),
    # ... then those that start with a digit: ISO 8601 (and SigV4's
    # 20240517T104213Z), "17 May 2024", nginx's 17/May/2024:10:42:13 +0000,
    # 5/17/2024, and a clock with AM or PM.
    (
        re.compile(
            rf"\d(?<![\w:.]\d)(?:"
            rf"\d{{3}}-\d{{2}}-\d{{2}}(?:[T ]{_CLOCK})?(?:Z|[+-]\d{{2}}(?::?\d{{2}})?|\sUTC)?"
            rf"|\d{{7}}T\d{{6}}Z"
            rf"|\d?{_DAY_MONTH_YEAR}"
            rf"|\d/{_MONTH}/\d{{4}}:{_CLOCK}(?:\s[+-]\d{{4}})?"
            rf"|\d?/\d{{1,2}}/\d{{2,4}}(?:,?\s{_CLOCK}(?:\s?[AP]M)?)?"
            rf"|{_CLOCK_REST}\s?[AP]M"
            rf")(?![\w:])"
        ),
        "<time>",
        (),
    ),
    (
        re.compile(r"\b[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\b", re.I),
        "<uuid>",
        ("-",),
    ),
    # IPv6, written with "::" or as eight groups, with a zone and, unbracketed
    # as Node prints it, a port that cannot be told from a group.
    (
        re.compile(
            r"(?<![\w:.])(?=[0-9A-Fa-f:]*\d)(?=[0-9A-Fa-f:]*::|(?:[0-9A-Fa-f]{1,4}:){7})"
            r"[0-9A-Fa-f]{0,4}(?::[0-9A-Fa-f]{0,4}){2,8}(?:%[\w.]+)?(?::\d{1,5})?(?![\w:])"
        ),
        "<ip>",
        _ipv6_possible,
    ),
    (re.compile(r"\d(?<![\w.]\d)\d{0,2}(?:\.\d{1,3}){3}(?!\.?\d)"), "<ip>", (".",)),
    # Standard base64 (S3's host ids, digests): before paths, as it holds "/".
    (
        re.compile(
            r"(?<![A-Za-z0-9+/])(?=[A-Za-z0-9+/]*[0-9])(?=[A-Za-z0-9+/]*[a-z])"
            r"(?=[A-Za-z0-9+/]*[A-Z])(?=[A-Za-z0-9+/]*[+/=])[A-Za-z0-9+][A-Za-z0-9+/]{19,}"
            r"={0,2}(?![A-Za-z0-9+/=])"
        ),
        "<id>",
        ("+", "/", "="),
    ),
    # Unix paths (two segments or more, or one with a dot or a query:
    # /tmp/x, /app.py, /search?q=1), relative ones of three segments or more
    # (an S3 key: exports/2024/05/x.csv) and Windows paths (C:\x\y).
    (
        re.compile(
            r"(?<![\w/])(?:~|\.{1,2})?(?:/[\w.@~+%<>-]+){2,}/?(?:\?\S*)?"
            r"|(?<![\w/])/[\w@~+%-]*\.[\w.@~+%-]+(?:\?\S*)?"
            r"|(?<![\w/])/[\w.@~+%-]+\?\S*"
            r"|(?<![\w/.:@~+%<>-])[\w.@~+%-]+(?:/[\w.@~+%<>-]+){2,}/?"
            r"|\b[a-z]:\\(?:[^\\\s]+\\)*[^\\\s]*",
            re.IGNORECASE,
        ),
        "<path>",
        ("/", "\\"),
    ),
    (re.compile(r"\b0x[0-9a-f]+\b", re.IGNORECASE), "<hex>", ("0x", "0X")),
    # Durations with their unit glued on, whose unit changes with their size
    # (Go writes 950ms, 2.5s, 1m30.2s; pretty-ms 250ms, 2.5s).
    (
        re.compile(
            rf"\d(?<![\w.]\d)\d*(?:\.\d+)?{_UNIT}(?:\d+(?:\.\d+)?{_UNIT}){{0,3}}(?![{_ALNUM}])"
        ),
        "<dur>",
        (),
    ),
    (
        re.compile(
            rf"(?<![{_ALNUM}])([a-z]{{1,12}}[_-])(?=[{_ALNUM}]{{8}})(?:"
            rf"(?=[A-Za-z]*[0-9])|(?=[0-9a-f]+(?![{_ALNUM}]))"
            rf"|(?<=_)(?=[a-z0-9]*[A-Z])(?=[A-Z0-9]*[a-z])"
            rf"|(?=[{_ALNUM}]{{16}})(?=[a-z0-9]*[A-Z])(?=[A-Z0-9]*[a-z])"
            rf")[{_ALNUM}]+(?![{_ALNUM}])"
        ),
        r"\1<id>",
        ("_", "-"),
    ),
    (
        re.compile(
            rf"(?<![{_ALNUM}])(?=[0-9a-fA-F]*[0-9])(?=[0-9a-fA-F]*[a-fA-F])[0-9a-fA-F]{{8,}}"
            rf"(?![{_ALNUM}])"
        ),
        "<hex>",
        (),
    ),
    (
        re.compile(
            rf"(?<![{_ALNUM}])(?=[A-Za-z]*[0-9])(?=[0-9]*[A-Za-z])"
            rf"(?:(?=[{_ALNUM}]{{12}})|(?=[A-Za-z]+[0-9]+[A-Za-z]|[0-9]+[A-Za-z]+[0-9]))"
            rf"[{_ALNUM}]{{5,}}(?![{_ALNUM}])"
        ),
        "<id>",
        (),
    ),
    # Numbers, also inside words (job991, worker3) and with decimals or
    # thousands separators (30,012 and 30.5 are one number each).
    (re.compile(r"\d+(?:[.,]\d+)*"), "<n>", ()),
)


def _precheck(needs: tuple[str, ...] | Callable[[str], bool]) -> Callable[[str], object] | None:
    """The rule's test as one call in C where it can be: a compiled search
    for its substrings (None: the rule always runs)."""
    if callable(needs):
        return needs
    return re.compile("|".join(re.escape(part) for part in needs)).search if needs else None


_CHECKED_RULES = tuple(
    (pattern, replacement, _precheck(needs)) for pattern, replacement, needs in _RULES
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


def fold_field(raw: bytes | str | None, *, read: int = REASON_BYTES) -> tuple[str, str]:
    """The group key and the folded text of a failedReason field as Redis
    answers it, decoded as the job decoder decodes it (codec.failure_reason),
    its first ``read`` bytes only: the most the caller reads of a field (the
    index REASON_BYTES, the Recent actions panel fewer), so that one of that
    many bytes may have been cut there."""
    form = fold_form(raw, read=read)
    if form is not None:
        return _fold_field(form)
    return _keyed(fold(field_text(raw, read=read)))


def fold_form(raw: bytes | str | None, *, read: int = REASON_BYTES) -> bytes | None:
    """The field with its ASCII digits read as "1", when that folds as the
    field itself does (fold_field folds it so); None when it may not (a field
    of ``read`` bytes or more, a JSON-quoted one with escapes, one with "0x").
    Two fields of one form fold alike: a caller folding many folds each form
    once (a cohort's 100,000 reasons of a few kinds)."""
    raw, read = _field_bytes(raw, read)
    if (
        isinstance(raw, bytes)
        and len(raw) < read
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
        return raw.translate(_ONE_DIGIT)
    return None


def field_text(raw: bytes | str | None, *, read: int = REASON_BYTES) -> str:
    """The text fold_field folds: the field's first ``read`` bytes decoded
    (a JSON-quoted one cut there from its whole escapes), "" for none."""
    raw, read = _field_bytes(raw, read)
    if raw is not None and len(raw) >= read:
        # Read cut or whole, the same bytes: one of exactly ``read`` may be
        # one the caller's script cut.
        return _cut_reason(raw[:read])
    return codec.failure_reason(raw) or ""


def _field_bytes(raw: bytes | str | None, read: int) -> tuple[bytes | None, int]:
    encoded = raw.encode("utf-8", "replace") if isinstance(raw, str) else raw
    return encoded, min(read, REASON_BYTES)


def _cut_reason(head: bytes) -> str:
    """The text of a failedReason cut where it was read. One that bullmq's
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
