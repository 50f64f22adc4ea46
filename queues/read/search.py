"""Search one state of a queue, server-side, newest first, in short slices.

A query is ``<field> <op> <value>``:

- ``id = 42``: that job, exact (one lookup, no scan);
- ``name ~ mail`` / ``reason ~ timeout``: the name or failed reason contains
  the text, ASCII letters in any case (``Timeout`` finds ``timeout``; other
  letters match as typed: Lua's ``string.lower`` knows ASCII only), as typed
  or JSON-escaped (bullmq 2.20.1's Python writer stores reasons as JSON);
- ``name = send-mail`` / ``reason = ...``: the whole field, exact case;
- ``data ~ text``: the data's JSON text contains the text, exact case (data
  is machine text: ids, keys; a string inside it is found whether the writer
  escaped non-ASCII characters and quotes or not);
- ``data.user.id = 42``: the JSON value at that path equals the scalar
  (``42``, ``"42"``, ``true``, ``null``; anything else is a string), types
  included: ``42`` does not match ``"42"``. Array items by 0-based index
  (``data.items.0.sku``).

Every match is plain text (``string.find`` with ``plain``): ``.*``, ``%``,
``[`` are just characters. A value may be put in double quotes (a JSON
string) to keep its outer spaces.

The scan runs inside Redis (priv/scripts/searchJobs-1.lua), a slice at a
time: each slice is sized so one call lasts about :data:`TARGET_CALL_MS`, and
between calls the search sleeps so that Redis spends at most :data:`DUTY` of
the wall time on it; the workers' commands run in between. The position is a
:class:`Cursor` the caller keeps (the dashboard hands it to the page, which
sends it back with its next poll): the server holds nothing between steps, so
a search costs nothing once its page stops asking.
"""

from __future__ import annotations

import codecs
import json
import re
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

from redis import Redis

from queues import codec, scripts
from queues.commands.reads import search_slice
from queues.keys import MAX_JOB_ID_LENGTH, InvalidName, validate_job_id
from queues.numerals import NotWholeNumber, parse_whole
from queues.read import answers, counts
from queues.read.job import state_of
from queues.read.refs import QueueRef
from queues.read.states import TAB, TAB_OF_KEY, Tab

MAX_QUERY_LENGTH = 1000
MAX_PATH_DEPTH = 16
# Fields larger than this are not looked into (counted as unchecked): copying
# and decoding megabytes inside one call would hold Redis for milliseconds.
MAX_FIELD_BYTES = 256 * 1024
# One call's goal. The slice size adapts to the measured time of the last
# call, so a call stays near this whatever the jobs hold.
TARGET_CALL_MS = 3.0
# At most this share of wall time is Redis busy with one search: after a call
# of t ms the search sleeps t * (1 - DUTY) / DUTY. A worker's command waits at
# most one call (~3 ms). Measured (bench/search.py, 1,000,000 failed jobs): at
# 0.4 a full scan took 28-31 s (target 20 s); at 0.6 it took 14-16 s while a
# worker beside it kept 98% of its throughput (target 80%).
DUTY = 0.6
FIRST_BATCH = 200
MIN_BATCH, MAX_BATCH = 10, 5000
# Bytes of the field shown each side of a match (the match itself up to twice
# that): enough to tell "c-42" from "c-420" in a row; a step asks for at most
# the 50 rows a page shows, so at most 50 * 4 * 40 bytes more per step.
AROUND_BYTES = 40

# What a query's field names, and the job hash field it reads.
FIELDS = {"id": "", "name": "name", "reason": "failedReason", "data": "data"}
_ALIASES = {"failedreason": "reason", "failed_reason": "reason", "jobid": "id", "job": "id"}
_QUERY = re.compile(
    r"(?P<field>[A-Za-z_]+)(?P<path>(?:\.[^\s.=~]+)*)\s*(?P<op>=|~)\s*(?P<value>.*)", re.S
)
EXAMPLES = "reason ~ timeout, name ~ email, data ~ user-42, data.user_id = 42, id = 17"


class SearchError(ValueError):
    """A search that cannot run: a malformed query, or a state key of the
    wrong type. The message says why in plain words."""


class QueryError(SearchError):
    pass


@dataclass(frozen=True, slots=True)
class Query:
    field: str  # a key of FIELDS
    op: str  # "=" or "~"
    value: Any  # the text sought; for a path, the JSON scalar
    path: tuple[str, ...] = ()

    @property
    def text(self) -> str:
        """The query written back, normalised."""
        value = json.dumps(self.value) if self.path else self.value
        return f"{'.'.join((self.field, *self.path))} {self.op} {value}"


def _encodable(value: Any) -> Any:
    """``value``, unless it is text UTF-8 cannot hold: a JSON string may
    carry half a character ("\\ud800"), which Redis cannot take."""
    if isinstance(value, str):
        try:
            value.encode()
        except UnicodeEncodeError:
            raise QueryError("The search is not valid Unicode text") from None
    return value


def _unquoted(raw: str) -> str:
    if len(raw) >= 2 and raw[0] == raw[-1] == '"':
        try:
            value = json.loads(raw)
        except ValueError:
            raise QueryError("The quoted value is not a valid JSON string") from None
        if isinstance(value, str):
            return str(_encodable(value))
    return raw


def _no_constant(name: str) -> Any:
    raise ValueError(name)


def _scalar(raw: str) -> Any:
    """A path's expected value: a JSON scalar when it reads as one (finite
    numbers only), else the text itself."""
    try:
        value = json.loads(raw, parse_constant=_no_constant)
    except ValueError:
        return raw
    except RecursionError:
        raise QueryError("The value is nested too deeply") from None
    if isinstance(value, dict | list):
        raise QueryError("A path compares with one value (text, number, true, false or null)")
    if isinstance(value, float) and value in (float("inf"), float("-inf")):
        raise QueryError("The number is too large")
    return _encodable(value)


def parse_query(text: str) -> Query:
    """``text`` as a :class:`Query`; :class:`QueryError` says what is wrong."""
    if len(text) > MAX_QUERY_LENGTH:
        raise QueryError(
            f"The search is {len(text):,} characters long; at most {MAX_QUERY_LENGTH:,}"
        )
    _encodable(text)
    match = _QUERY.fullmatch(text.strip())
    if match is None:
        raise QueryError(f"Write a field, = or ~, and a value, e.g. {EXAMPLES}")
    name = match["field"].lower()
    name = _ALIASES.get(name, name)
    if name not in FIELDS:
        raise QueryError(f"Unknown field {match['field']!r}: search by id, name, reason or data")
    path = tuple(match["path"].split(".")[1:])
    op, raw = match["op"], match["value"].strip()
    if not raw:
        raise QueryError("Give a value to search for")
    if path:
        if name != "data":
            raise QueryError("Only data has a path (data.user_id = 42)")
        if len(path) > MAX_PATH_DEPTH:
            raise QueryError(f"A path has at most {MAX_PATH_DEPTH} parts")
        if op != "=":
            raise QueryError("A path compares with = (data.user_id = 42)")
        return Query(name, op, _scalar(raw), path)
    if name == "id" and op != "=":
        raise QueryError("A job id is matched exactly: id = 42")
    if name == "data" and op != "~":
        raise QueryError("Data is searched with ~ (data ~ text) or by path (data.user_id = 42)")
    return Query(name, op, _unquoted(raw))


def _ascii_lower(text: str) -> str:
    # As Lua's string.lower does it: A-Z only, whatever else the text holds.
    return text.encode().lower().decode()


def _data_texts(text: str) -> list[str]:
    """What ``text`` may look like inside JSON text: as typed, and as a JSON
    string's inside with non-ASCII characters escaped or not (Python writers
    escape them by default, Node's do not; both escape quotes). Failed
    reasons too: bullmq 2.20.1 (Python) stores them JSON-encoded."""
    forms = [text, json.dumps(text)[1:-1], json.dumps(text, ensure_ascii=False)[1:-1]]
    return list(dict.fromkeys(forms))


@dataclass(frozen=True, slots=True)
class _Slice:
    """A query as searchJobs-1.lua takes it (its ARGV[6..n])."""

    field: str
    how: str
    wanted: str
    fold_case: bool
    extra: tuple[str, ...]


def _slice_args(query: Query) -> _Slice:
    hash_field = FIELDS[query.field]
    if query.path:
        return _Slice(hash_field, "path", json.dumps(query.value), False, query.path)
    if query.op == "=":
        return _Slice(hash_field, "equals", query.value, False, ())
    fold_case = query.field != "data"
    texts = _data_texts(query.value)
    if fold_case:
        texts = list(dict.fromkeys(map(_ascii_lower, texts)))
    first, *others = texts
    return _Slice(hash_field, "contains", first, fold_case, tuple(others))


# A sorted set's score as Redis writes it: digits, a point, an exponent.
_SCORE = re.compile(r"[0-9.eE+-]{1,32}")
# Redis's lists hold fewer than 2^32 items.
MAX_LIST_INDEX = 2**32
MAX_SEARCHED = 10**15


def _finite_score(text: str) -> bool:
    if _SCORE.fullmatch(text) is None:
        return False
    try:
        return abs(float(text)) != float("inf")
    except ValueError:
        return False


@dataclass(frozen=True, slots=True)
class Cursor:
    """Where a search goes on: which of the tab's keys (``wait`` has two),
    where in it ("" = from its newest; a list's index, or a sorted set's
    score of ``anchor``, the last member looked at), how many jobs were
    looked at so far, and the slice size the last call settled on."""

    key: int = 0
    start: str = ""
    anchor: str = ""
    searched: int = 0
    batch: int = FIRST_BATCH

    def encode(self) -> str:
        # The anchor (a job id, which may hold "|") goes last.
        return f"{self.key}|{self.start}|{self.searched}|{self.batch}|{self.anchor}"

    @classmethod
    def decode(cls, text: str, tab: Tab) -> Cursor:
        """A cursor a page sent back; a forged or stale one is a QueryError."""
        invalid = QueryError("The search position is not valid: start the search again")
        parts = text.split("|", 4)
        if len(parts) != 5 or len(parts[4]) > MAX_JOB_ID_LENGTH:
            raise invalid
        raw_key, start, raw_searched, raw_batch, anchor = parts
        try:
            key = parse_whole(raw_key, len(tab.keys) - 1)
            searched = parse_whole(raw_searched, MAX_SEARCHED)
            batch = min(max(parse_whole(raw_batch), MIN_BATCH), MAX_BATCH)
            if tab.keys[key].is_list and start:
                parse_whole(start, MAX_LIST_INDEX)
        except NotWholeNumber:
            raise invalid from None
        if tab.keys[key].is_list:
            valid = anchor == ""
        else:
            valid = (start == "" and anchor == "") or (_finite_score(start) and anchor != "")
        if not valid:
            raise invalid
        return cls(key, start, anchor, searched, batch)


@dataclass(frozen=True, slots=True)
class FoundText:
    """Why a job matched: the searched field's text just before, of, and just
    after the match, and whether the field goes on beyond what is shown. The
    window is cut in bytes; a character cut at its edge is dropped."""

    name: str  # the query's field: "name", "reason" or "data"
    before: str
    match: str
    after: str
    more_before: bool
    more_after: bool

    def as_json(self) -> answers.SearchFound:
        return answers.SearchFound(
            field=self.name,
            before=self.before,
            match=self.match,
            after=self.after,
            more_before=self.more_before,
            more_after=self.more_after,
        )


def _found_text(name: str, raw: list[Any]) -> FoundText:
    """One entry of searchJobs-1.lua's ``around`` list, as text. The window is
    cut in bytes: a continuation byte at its cut start and an unfinished
    character at its cut end are left out (one decoder reads the match and
    what follows, so a character the match's own cut splits goes after it);
    any other byte that is not UTF-8 shows as U+FFFD."""
    window = raw[0] if isinstance(raw[0], bytes) else str(raw[0]).encode()
    offset, length = int(raw[1]), int(raw[2])
    more_before, more_after = int(raw[3]) == 1, int(raw[4]) == 1
    before = window[:offset]
    if more_before:
        before = before.lstrip(bytes(range(0x80, 0xC0)))
    decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
    match = decoder.decode(window[offset : offset + length])
    after = decoder.decode(window[offset + length :], final=not more_after)
    return FoundText(name, before.decode(errors="replace"), match, after, more_before, more_after)


@dataclass(slots=True)
class SearchStep:
    """What one step of a search found: the matching ids, newest first, and
    where it goes on (``cursor`` None: the search is over). ``found``: the
    text around the match of the first hits asked for (``around``)."""

    hits: list[str]
    cursor: Cursor | None
    searched: int  # jobs looked at so far, this step included
    total: int  # jobs the state holds now
    unchecked: int = 0  # fields too large to look into
    calls: int = 0
    longest_call_ms: float = 0.0
    busy_ms: float = 0.0  # time spent in calls
    found: dict[str, FoundText] = field(default_factory=dict)

    @property
    def done(self) -> bool:
        return self.cursor is None


@dataclass(slots=True)
class Pacing:
    """How a step spends Redis' time; tests and the benchmark change it."""

    target_call_ms: float = TARGET_CALL_MS
    duty: float = DUTY
    sleep: Callable[[float], None] = field(default=time.sleep)

    def next_batch(self, batch: int, elapsed_ms: float) -> int:
        # At most double or halve at once: one slow call (a big job, a busy
        # moment) must not swing the size.
        factor = min(max(self.target_call_ms / max(elapsed_ms, 0.01), 0.5), 2.0)
        return min(max(int(batch * factor), MIN_BATCH), MAX_BATCH)

    def rest(self, elapsed_ms: float) -> None:
        self.sleep(elapsed_ms * (1 - self.duty) / self.duty / 1000)


def _tab(state: str) -> Tab:
    tab = TAB.get(state)
    if tab is None:
        raise QueryError(f"Unknown state {state!r}")
    return tab


def _by_id(client: Redis, ref: QueueRef, tab: Tab, job_id: str) -> SearchStep:
    total = counts.state_counts(client, ref.keys, (tab.name,))[tab.name]
    try:
        validate_job_id(job_id)
    except InvalidName:
        return SearchStep([], None, 0, total)
    key_state = state_of(client, ref.keys, job_id)
    found = key_state is not None and TAB_OF_KEY.get(key_state) == tab.name
    return SearchStep([job_id] if found else [], None, 1, total)


def search_step(
    client: Redis,
    ref: QueueRef,
    state: str,
    query: Query,
    cursor: Cursor | None = None,
    *,
    budget_ms: float = 250.0,
    max_hits: int = 50,
    around: int = 0,
    pacing: Pacing | None = None,
    stopped: Callable[[], bool] = lambda: False,
) -> SearchStep:
    """Search on from ``cursor`` (None: from the newest job) for about
    ``budget_ms`` of wall time, or until ``max_hits`` matches are found (the
    first page appears at once), or to the end of the state, or until
    ``stopped()`` says so (asked between calls). The first ``around`` hits come
    with the text around their match (the rows a page shows: read inside the
    call that found them, where the field already is)."""
    tab = _tab(state)
    if query.field == "id":
        return _by_id(client, ref, tab, query.value)
    pacing = pacing or Pacing()
    args = _slice_args(query)
    at = cursor or Cursor()
    step = SearchStep([], at, at.searched, 0)
    began = time.monotonic()
    while step.cursor is not None:
        at = step.cursor
        key_state = tab.keys[at.key]
        start = at.start or ("0" if key_state.is_list else "+inf")
        call = search_slice(
            ref.keys,
            key_state.name,
            key_state.structure,
            start=start,
            anchor=at.anchor,
            count=at.batch,
            field=args.field,
            how=args.how,
            wanted=args.wanted,
            fold_case=args.fold_case,
            max_bytes=MAX_FIELD_BYTES,
            around=max(0, around - len(step.found)),
            context_bytes=AROUND_BYTES,
            extra=args.extra,
        )
        called = time.perf_counter()
        answer = scripts.run(client, call)
        elapsed_ms = (time.perf_counter() - called) * 1000
        step.calls += 1
        step.busy_ms += elapsed_ms
        step.longest_call_ms = max(step.longest_call_ms, elapsed_ms)
        if answer[0] in (b"wrongtype", "wrongtype"):
            raise SearchError(
                f"The {key_state.name} key of {ref.qualified} holds a"
                f" {codec.text(answer[1])}, not a {key_state.structure}: it cannot be searched"
            )
        looked_at, next_start, next_anchor, _, unchecked, texts, *raw_hits = answer
        hits = [codec.text(hit) or "" for hit in raw_hits]
        step.hits.extend(hits)
        for job_id, raw in zip(hits, texts, strict=False):
            step.found[job_id] = _found_text(query.field, raw)
        step.searched += int(looked_at)
        step.unchecked += int(unchecked)
        batch = pacing.next_batch(at.batch, elapsed_ms)
        next_text = codec.text(next_start) or ""
        if next_text:
            anchor = codec.text(next_anchor) or ""
            step.cursor = Cursor(at.key, next_text, anchor, step.searched, batch)
        elif at.key + 1 < len(tab.keys):
            step.cursor = Cursor(at.key + 1, "", "", step.searched, batch)
        else:
            step.cursor = None
        if step.cursor is None or stopped():
            break
        pacing.rest(elapsed_ms)
        spent_ms = (time.monotonic() - began) * 1000
        if spent_ms >= budget_ms or len(step.hits) >= max_hits:
            break
    step.total = counts.state_counts(client, ref.keys, (tab.name,))[tab.name]
    return step


def search_all(
    client: Redis, ref: QueueRef, state: str, query: Query, *, pacing: Pacing | None = None
) -> Iterator[SearchStep]:
    """Every step of a whole search, to its end (the benchmark, the tests)."""
    cursor: Cursor | None = None
    while True:
        step = search_step(client, ref, state, query, cursor, pacing=pacing)
        yield step
        if step.cursor is None:
            return
        cursor = step.cursor
