"""A queue whose keys hold anything (issue 22, "Beyond the list").

A queue is seeded with jobs in every state, a flow, logs, a job scheduler and
a legacy repeatable one, limits, metrics, events, a deduplication key, and
the dashboard's own keys (its error groups, a recent action's record, the
metrics history). Then its keys get what another writer or a hand edit may
leave, and every page kind is rendered and every action runs, from the
pages and the API. Asserted: no 5xx; every /api/ answer JSON; and an action
leaves no sound job in two states or none (unless it deleted it whole),
never puts a job twice where it was once, and never leaves a job in a state
without the hash it had.

Three sweeps go through every value of a list: each odd value in every field
of every job (numbers in other digits, past every calendar and every double,
half JSON, bytes that are no UTF-8), in every field of every kind of event,
and each score no clock wrote (+-inf, 1e308) on every member of every sorted
set. Then hypothesis (seeded: ``derandomize``, the same inputs on every run)
breaks up to three keys at a time (another type, a delete, odd fields,
members, scores and entries) of each group of keys, and runs pages and
actions on it. Each test prints how much it tried; all of them take under a
minute.
"""

from __future__ import annotations

import json
import os
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

import pytest
from django.test import Client
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from redis import Redis

from queues.collector import HistoryCollector
from queues.keys import is_scheduler_run_id
from queues.read.error_folding import fold, group_key
from queues.read.refs import QueueRef
from queues.read.states import TAB
from queues.schedulers import JobSchedulers, Repeat
from tests.dashboard_seed import now_ms, seed_events, seed_job, seed_metrics
from tests.history_helpers import collect_until_read, job_events, write_events
from tests.keyspace import placement, snapshot

NAME = "fz"
REF = QueueRef("bull", NAME)
KEYS = REF.keys
PAGE, API = f"/queues/bull/{NAME}/", f"/api/queues/bull/{NAME}/"
EXAMPLES = int(os.environ.get("FZ_EXAMPLES", "25"))  # per group of keys
FUZZ = settings(
    max_examples=EXAMPLES,
    derandomize=True,  # the same inputs on every run
    database=None,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
# The seeded jobs: id -> (state, failed reason).
SEEDED = {
    "1": ("wait", ""), "2": ("wait", ""), "3": ("prioritized", ""), "4": ("delayed", ""),
    "5": ("active", ""), "6": ("completed", ""), "7": ("completed", ""),
    "8": ("failed", "connect ECONNREFUSED 10.0.0.7:5432"),
    "9": ("failed", "connect ECONNREFUSED 10.0.0.9:5432"),
    "10": ("failed", "card declined: insufficient funds"),
    "p": ("waiting-children", ""), "c1": ("wait", ""), "c2": ("completed", ""),
    "order-7f3a": ("failed", "TypeError: Cannot read properties of undefined (reading 'id')"),
}  # fmt: skip
JOB_IDS = sorted(SEEDED)
# A job of each state (and a child): whose pages each sweep renders.
SHOWN = ["1", "3", "4", "5", "6", "8", "p", "c1"]
SCHEDULER = "nightly-digest"
LEGACY = "digest:legacy-1:::0 3 * * *"
GROUPS = sorted({group_key(fold(reason)) for _, reason in SEEDED.values() if reason})
# Every field a job hash may hold (docs/protocol.md) and one it may not.
JOB_FIELDS = [
    "name", "data", "opts", "timestamp", "delay", "priority", "processedOn", "finishedOn",
    "atm", "attemptsMade", "ats", "stc", "pb", "progress", "returnvalue", "failedReason",
    "stacktrace", "parentKey", "parent", "deid", "rjk", "defa", "x",
]  # fmt: skip

# What other writers and hand edits leave: numbers in other digits, past
# every calendar and every double, with signs and exponents; half JSON and
# JSON of the wrong shape; text no writer meant; bytes that are no UTF-8.
ODD_NUMBERS = [
    "²", "\u0661\u0662", "99999999999999999", "-99999999999999999", "1e400", "NaN", "",
    "9" * 5000, "1_000",
]  # fmt: skip
ODD_JSON = [
    '{"a":', "[]", '"quoted"', '["not", "a", "job"]', '"\\ud800"', "[" * 5000,
    '{"attempts": "x", "backoff": {"type": "exponential", "delay": 1e308}, "priority": 1e400}',
    '{"repeat": {"every": "²", "limit": -1}, "removeOnFail": "yes", "fpof": true, "idof": true}',
    '{"id": "1", "queueKey": "bull:nowhere"}', '{"step": 1e400, "of": -1}',
]  # fmt: skip
ODD_TEXT = ["<script>alert(1)</script>", "\x00", "line\nbreak", "x" * 70_000, "bull:fz:1", "a:b"]
odd_bytes = st.one_of(
    st.sampled_from(ODD_NUMBERS).map(str.encode),
    st.sampled_from(ODD_JSON).map(str.encode),
    st.sampled_from(ODD_TEXT).map(str.encode),
    st.sampled_from(JOB_IDS).map(str.encode),
    st.binary(max_size=16),
    st.integers().map(lambda n: str(n).encode()),
)
odd_scores = st.one_of(
    st.sampled_from([float("inf"), float("-inf"), 1e308, -1e308, 2.0**53 + 1, -1.0, 0.0]),
    st.floats(allow_nan=False),
)
# An events entry as BullMQ writes one, with anything in its fields.
EVENTS = [
    "added", "waiting", "delayed", "active", "progress", "completed", "failed",
    "retries-exhausted", "stalled", "removed", "duplicated", "cleaned", "drained", "x",
]  # fmt: skip
EVENT_FIELDS = [
    "jobId", "delay", "attemptsMade", "failedReason", "prev", "data", "returnvalue", "count",
    "name", "deduplicationId", "x",
]  # fmt: skip
event_entries = st.builds(
    lambda event, fields: {b"event": event.encode(), **{k.encode(): v for k, v in fields}},
    st.sampled_from(EVENTS),
    st.lists(st.tuples(st.sampled_from(EVENT_FIELDS), odd_bytes), max_size=4),
)
TYPES = ["string", "list", "set", "zset", "hash", "stream"]
SCORES = [float("inf"), float("-inf"), 1e308, -1e308, 2.0**53 + 1, 1e15, -1.0]


@dataclass
class Tally:
    """What a test tried: its size, printed at its end."""

    keys: Counter[str] = field(default_factory=Counter)
    values: int = 0
    requests: Counter[str] = field(default_factory=Counter)

    def said(self, what: str) -> str:
        return (
            f"\n{what}: {sum(self.keys.values())} writes to {len(self.keys)} keys,"
            f" {self.values} values, {sum(self.requests.values())} requests to"
            f" {len(self.requests)} pages and actions"
        )


TALLY = Tally()


# --------------------------------------------------------------------------- the queue


def _seed(client: Redis, superuser: Client) -> None:
    now = now_ms()
    # First: a stream only grows, and these are two minutes old.
    write_events(client, REF, job_events("h1", now - 120_000, 50, 900, ok=False))
    for job_id, (state, reason) in SEEDED.items():
        fields: dict[str, str | int] = {"failedReason": reason} if reason else {}
        if job_id in ("c1", "c2"):
            fields |= {
                "parentKey": KEYS.job("p"),
                "parent": json.dumps({"id": "p", "queueKey": KEYS.base[:-1]}),
            }
        seed_job(client, KEYS, job_id, state=state, fields=fields, data={"user": job_id})
    client.set(KEYS.lock("5"), "token-5", px=60_000)
    client.sadd(KEYS.stalled, "5")
    client.set(KEYS.stalled_check, now, px=30_000)
    client.set(KEYS.limiter, 3, px=1_000)
    client.set(KEYS.pc, 1)
    client.sadd(KEYS.dependencies("p"), KEYS.job("c1"))
    client.hset(KEYS.processed("p"), KEYS.job("c2"), '{"ok": true}')
    client.hset(KEYS.job("p") + ":failed", KEYS.job("c3"), "ignored: timeout")
    client.zadd(KEYS.job("p") + ":unsuccessful", {KEYS.job("c4"): now})
    client.rpush(KEYS.logs("8"), "connecting to 10.0.0.7", "giving up after 3 tries")
    client.hset(KEYS.meta, mapping={"concurrency": 5, "max": 50, "duration": 1000})
    client.set(KEYS.id, 10)
    client.set(KEYS.deduplication("order-7f3a"), "order-7f3a", px=60_000)
    seed_metrics(client, KEYS, [3, 4, 5], [1, 0, 2], now)
    events = [
        ("failed", {"jobId": "8", "failedReason": "boom", "prev": "active"}),
        ("delayed", {"jobId": "4", "delay": str(now + 60_000)}),
        ("retries-exhausted", {"jobId": "9", "attemptsMade": "3"}),
    ]
    seed_events(client, KEYS, events)
    JobSchedulers(NAME, client).upsert(SCHEDULER, Repeat(every_ms=60_000), name="digest")
    client.zadd(KEYS.repeat, {LEGACY: now + 3_600_000})
    # The dashboard's own keys: the error groups' index, a recent action's
    # record, the metrics history of a collector's pass.
    assert superuser.get(PAGE + "errors/").status_code == 200
    retried = superuser.post(API + "actions/", {"action": "retry", "ids": ["9"]})
    assert retried.status_code == 200, retried.content
    collect_until_read(HistoryCollector(client, lambda: [REF], name="fuzz"))


def _restore(client: Redis, dumps: dict[bytes, bytes]) -> None:
    client.flushdb()
    pipe = client.pipeline(transaction=False)
    for key, dump in dumps.items():
        pipe.restore(key, 0, dump)
    pipe.execute()


# --------------------------------------------------------------------------- corruptions


@st.composite
def corruptions(
    draw: st.DrawFn, keys: list[bytes], kinds: dict[bytes, str], fields: dict[bytes, list[bytes]]
) -> tuple[bytes, str, Any]:
    """One key's new content: (key, how, what) for _corrupt. ``how`` is
    "delete", another type ("string", "list"...) with odd members, or "odd"
    (the key keeps its type and gets odd fields, members, scores or entries)."""
    key = draw(st.sampled_from(keys))
    how = draw(st.sampled_from(["odd", "odd", "odd", "retype", "delete"]))
    if how == "delete":
        return key, how, None
    if how == "retype":
        return key, draw(st.sampled_from(TYPES)), draw(st.lists(odd_bytes, min_size=1, max_size=3))
    kind = kinds[key]
    if kind == "hash":
        names = st.one_of(st.sampled_from(fields[key]), st.sampled_from(fields[key]), odd_bytes)
        return key, how, draw(st.lists(st.tuples(names, odd_bytes), min_size=1, max_size=4))
    if kind == "stream":
        return key, how, draw(st.lists(event_entries, min_size=1, max_size=3))
    if kind == "zset":
        return key, how, draw(st.lists(st.tuples(odd_bytes, odd_scores), min_size=1, max_size=3))
    return key, how, draw(st.lists(odd_bytes, min_size=1, max_size=3))


def _corrupt(client: Redis, key: bytes, how: str, what: Any) -> None:
    TALLY.keys[key.decode(errors="replace")] += 1
    raw: Any = client
    if how == "delete":
        raw.delete(key)
        return
    TALLY.values += len(what)
    if how != "odd":
        raw.delete(key)
        _write(raw, key, how, what)
        return
    # The key's type now: an earlier corruption of the example may have changed it.
    kind = raw.type(key).decode()
    values = [v for item in what for v in _bytes_in(item)]
    if kind == "hash":
        pairs = [item for item in what if isinstance(item, tuple) and isinstance(item[1], bytes)]
        raw.hset(key, mapping=dict(pairs or zip(values, values, strict=True)))
    elif kind == "stream":
        for entry in [item for item in what if isinstance(item, dict)] or [{b"event": values[0]}]:
            raw.xadd(key, entry)
    elif kind == "zset":
        scored = [item for item in what if isinstance(item, tuple) and isinstance(item[1], float)]
        raw.zadd(key, dict(scored or ((value, 0.0) for value in values)))
    else:
        _write(raw, key, kind if kind in TYPES else "string", values)


def _bytes_in(item: Any) -> list[bytes]:
    if isinstance(item, bytes):
        return [item]
    parts = item.values() if isinstance(item, dict) else item
    return [part for part in parts if isinstance(part, bytes)]


def _write(raw: Any, key: bytes, kind: str, values: list[bytes]) -> None:
    if kind == "string":
        raw.set(key, values[0])
    elif kind == "list":
        raw.rpush(key, *values)
    elif kind == "set":
        raw.sadd(key, *values)
    elif kind == "zset":
        raw.zadd(key, {value: float(at) for at, value in enumerate(values)})
    elif kind == "hash":
        raw.hset(key, mapping=dict(zip(values, values, strict=True)))
    else:
        raw.xadd(key, {b"event": values[0], b"jobId": values[-1]})


# --------------------------------------------------------------------------- requests


def pages(job_id: str, tab: str) -> list[str]:
    """Every page kind and every read of the API, for a job and a tab."""
    group = GROUPS[0]
    return [
        "/", "/?sort=failed", PAGE, f"{PAGE}?state={tab}", PAGE + "events/",
        PAGE + "events/?type=failed", f"{PAGE}events/?job={job_id}", f"{PAGE}job/{job_id}",
        f"{PAGE}job/{job_id}?fragment=logs", PAGE + "workers/", PAGE + "schedulers/",
        PAGE + "errors/", f"{PAGE}errors/?group={group}", PAGE + "cohorts/", PAGE + "history/",
        "/history/last-hour/", PAGE + "flow-children/p?page=0.0.0",
        f"{PAGE}search/?state={tab}&q=reason+~+ECONN",
        f"{PAGE}search/?state={tab}&q=data.user+%3D+1",
        f"{PAGE}goto/?job={job_id}", "/api/queues/", API, f"{API}jobs/?state={tab}",
        f"{API}job/{job_id}", API + "events/", f"{API}flow/{job_id}", API + "flow-children/p",
        API + "workers/", API + "limits/", API + "schedulers/", API + "errors/",
        f"{API}errors/{group}/jobs/", API + "cohorts/", f"{API}search/?state={tab}&q=data+~+user",
    ]  # fmt: skip


def _ids() -> st.SearchStrategy[str]:
    return st.sampled_from([*JOB_IDS, f"repeat:{SCHEDULER}:1", "gone"])


def every_action(job_id: str) -> list[tuple[str, dict[str, Any]]]:
    """Each action, from the API and the pages' forms (which word the outcome
    in a message), on ``job_id`` where it takes one."""
    ids = [job_id]
    return [
        (API + "actions/", {"action": "retry", "ids": ids, "state": "failed"}),
        (API + "actions/", {"action": "retry", "ids": ids, "state": "completed"}),
        (API + "actions/", {"action": "promote", "ids": ids}),
        (API + "actions/", {"action": "fail", "ids": ids, "reason": "by hand"}),
        (API + "actions/", {"action": "remove", "ids": ids}),
        (API + "bulk/", {"action": "retry_all", "state": "failed"}),
        (API + "bulk/", {"action": "retry_all", "state": "completed"}),
        (API + "bulk/", {"action": "promote_all"}),
        (API + "bulk/", {"action": "clean", "state": "failed", "grace_ms": 0}),
        (API + "bulk/", {"action": "clean", "state": "completed", "grace_ms": 0}),
        (API + "bulk/", {"action": "pause"}),
        (API + "bulk/", {"action": "resume"}),
        (API + "concurrency/", {"concurrency": 3}),
        (API + "concurrency/", {"concurrency": None}),
        (API + "schedulers/actions/", {"action": "run_now", "id": SCHEDULER}),
        (API + "schedulers/actions/", {"action": "remove", "id": SCHEDULER}),
        (API + "schedulers/actions/", {"action": "remove", "id": LEGACY}),
        (API + "errors/actions/", {"action": "retry", "group": GROUPS[0]}),
        (API + "errors/actions/", {"action": "remove", "group": GROUPS[-1]}),
        (API + "edit/", {"id": job_id, "data": {"user": "fixed"}}),
        (API + "duplicate/", {"id": job_id}),
        (API + "add/", {"name": "send", "data": {}, "opts": {"delay": 5000}}),
        (API + "search/act/", {"action": "retry", "state": "failed", "ids": ids}),
        (API + "search/act/", {"action": "promote", "state": "delayed", "ids": ids}),
        (API + "search/act/", {"action": "remove", "state": "completed", "ids": ids}),
        (PAGE + "actions/", {"action": "retry", "ids": ids, "state": "failed"}),
        (PAGE + "bulk/", {"action": "promote_all", "state": "delayed"}),
        (PAGE + "bulk/", {"action": "clean", "state": "failed", "grace_ms": "0"}),
        (PAGE + "errors/actions/", {"action": "retry", "group": GROUPS[0]}),
        (PAGE + "schedulers/actions/", {"action": "run_now", "id": SCHEDULER}),
        (PAGE + "duplicate/", {"id": job_id}),
        (PAGE + "add/", {"name": "send", "data": "{}", "delay": "1000"}),
    ]


@st.composite
def requests(draw: st.DrawFn) -> tuple[str, str, dict[str, Any] | None]:
    if draw(st.booleans()):
        return (
            "GET",
            draw(st.sampled_from(pages(draw(_ids()), draw(st.sampled_from(list(TAB)))))),
            None,
        )
    url, body = draw(st.sampled_from(every_action(draw(_ids()))))
    return "POST", url, body


def _send(client: Client, method: str, url: str, body: dict[str, Any] | None) -> Any:
    TALLY.requests[f"{method} {url.split('?')[0]}"] += 1
    if method == "GET":
        return client.get(url, HTTP_HX_REQUEST="true" if url.endswith("logs") else "")
    if url.startswith("/api/"):
        return client.post(url, json.dumps(body), content_type="application/json")
    return client.post(url, body)


def _answered(client: Client, method: str, url: str, body: Any, on: str) -> Any:
    """The answer, checked: no 5xx, JSON under the API."""
    answer = _send(client, method, url, body)
    request = f"{method} {url} {body} {on}"
    assert answer.status_code < 500, f"{request}: {answer.status_code}"
    if url.startswith("/api/"):
        assert answer["Content-Type"] == "application/json", request
    return answer


# --------------------------------------------------------------------------- what must hold


def _state_of_everything(client: Redis) -> tuple[dict[str, list[str]], set[str]]:
    """Every id's states (with repeats), and which of them have a key."""
    placed = placement(client, KEYS)
    ids = sorted(set(placed) | set(JOB_IDS))
    pipe = client.pipeline(transaction=False)
    for job_id in ids:
        pipe.exists(KEYS.job(job_id).encode(errors="surrogateescape"))
    return placed, {job_id for job_id, found in zip(ids, pipe.execute(), strict=True) if found}


def _assert_nothing_lost_or_doubled(
    request: str, before: tuple[dict[str, list[str]], set[str]], client: Redis
) -> None:
    (placed, kept), (now_placed, now_kept) = before, _state_of_everything(client)
    for job_id in set(placed) | set(now_placed) | kept:
        was, now = placed.get(job_id, []), now_placed.get(job_id, [])
        if len(was) == 1 and job_id in kept:  # a sound job
            gone = not now and job_id not in now_kept
            assert len(now) == 1 or gone, f"{request}: job {job_id} was in {was}, now in {now}"
        for state, count in Counter(now).items():
            assert count <= max(1, was.count(state)), f"{request}: job {job_id} {was} -> {now}"
        if now and job_id in kept:
            assert job_id in now_kept, f"{request}: job {job_id} in {now} lost its hash"


# --------------------------------------------------------------------------- the tests

# Which keys an example breaks: one group per test, so that each kind of key
# gets its share of the examples (drawn from all 60 at once, a few took most).
KEY_GROUPS: dict[str, Callable[[str], bool]] = {
    "states": lambda key: _suffix(key) in TAB_KEYS,
    "jobs": lambda key: _suffix(key) in JOB_IDS or is_scheduler_run_id(_suffix(key)),
    "per job": lambda key: _suffix(key).partition(":")[0] in JOB_IDS and ":" in _suffix(key),
    "queue": lambda key: _suffix(key) in QUEUE_SUFFIXES or _suffix(key).startswith("de:"),
    "schedulers": lambda key: (
        _suffix(key) == "repeat"
        or (_suffix(key).count(":") == 1 and _suffix(key).startswith("repeat:"))
    ),
    "dashboard": lambda key: key.startswith(_DASHBOARD_KEYS),
}
TAB_KEYS = {state.name for tab in TAB.values() for state in tab.keys}
QUEUE_SUFFIXES = {
    "id", "meta", "marker", "pc", "limiter", "stalled", "stalled-check", "events",
    "metrics:completed", "metrics:failed", "metrics:completed:data", "metrics:failed:data",
}  # fmt: skip
_DASHBOARD_KEYS = (KEYS.error_groups(""), KEYS.base + "echomq-dashboard:", "echomq:history")


def _suffix(key: str) -> str:
    """What follows the queue's base ("" for a key outside it)."""
    return key.removeprefix(KEYS.base) if key.startswith(KEYS.base) else ""


@dataclass
class Seeded:
    """The seeded keyspace, dumped once (restored before each example)."""

    dumps: dict[bytes, bytes]
    kinds: dict[bytes, str]
    fields: dict[bytes, list[bytes]]


_SEEDED: list[Seeded] = []


@pytest.fixture
def seeded(
    dashboard_redis: Redis, client_as: Callable[[str | None], Any]
) -> Iterator[tuple[Client, Seeded]]:
    superuser: Client = client_as("superuser")
    superuser.raise_request_exception = False  # a crash is a 500 to assert on
    if not _SEEDED:
        _seed(dashboard_redis, superuser)
        dumps = snapshot(dashboard_redis)
        kinds = {key: dashboard_redis.type(key).decode() for key in dumps}  # type: ignore[union-attr]
        fields = {
            key: sorted(dashboard_redis.hkeys(key))  # type: ignore[arg-type]
            for key, kind in kinds.items()
            if kind == "hash"
        }
        _SEEDED.append(Seeded(dumps, kinds, fields))
    TALLY.__init__()  # type: ignore[misc]
    yield superuser, _SEEDED[0]
    print(TALLY.said(os.environ.get("PYTEST_CURRENT_TEST", "").split(" ")[0]))


def every_page() -> list[str]:
    """Every page kind once, each tab's lists and each state's job page."""
    shared = [url for url in pages("1", "wait") if "/job/" not in url and "state=" not in url]
    shared = [url for url in shared if "?job=" not in url and "/flow/" not in url]
    per_tab = [url for tab in TAB for url in (f"{PAGE}?state={tab}", f"{API}jobs/?state={tab}")]
    per_job = [url for job_id in SHOWN for url in (f"{PAGE}job/{job_id}", f"{API}job/{job_id}")]
    per_job += [f"{API}flow/p", f"{API}flow/c1"]
    searches = [url for url in pages("1", "failed") if "/search/" in url]
    return [*shared, *per_tab, *per_job, *searches, f"{PAGE}job/8?fragment=logs"]


# The pages that show events.
EVENT_PAGES = [
    "/", PAGE, PAGE + "events/", PAGE + "events/?type=failed", PAGE + "events/?job=1",
    PAGE + "job/1", API + "events/", API + "events/?job=1", API + "job/1",
]  # fmt: skip


def _render(client: Client, urls: list[str], on: str) -> None:
    for url in urls:
        _answered(client, "GET", url, None, on)


def _act_everywhere(
    client: Client, redis: Redis, seeded: Seeded, break_it: Callable[[], None], on: str
) -> None:
    for url, body in every_action("8"):
        _restore(redis, seeded.dumps)
        break_it()
        before = _state_of_everything(redis)
        _answered(client, "POST", url, body, on)
        _assert_nothing_lost_or_doubled(f"POST {url} {body} {on}", before, redis)


def _odd_values() -> list[bytes]:
    return [*map(str.encode, ODD_NUMBERS + ODD_JSON + ODD_TEXT), b"\xff\xfe", b"\xc3"]


def test_every_field_of_every_job_holding_each_odd_value(
    dashboard_redis: Redis, seeded: tuple[Client, Seeded]
) -> None:
    """Point 10's class (a timestamp past every calendar) and its neighbours."""
    client, keyspace = seeded
    for value in _odd_values():

        def break_it(value: bytes = value) -> None:
            for job_id in JOB_IDS:
                TALLY.keys[KEYS.job(job_id)] += 1
                dashboard_redis.hset(KEYS.job(job_id), mapping=dict.fromkeys(JOB_FIELDS, value))
            TALLY.values += len(JOB_IDS) * len(JOB_FIELDS)

        on = f"with every job field = {value[:40]!r}"
        _restore(dashboard_redis, keyspace.dumps)
        break_it()
        _render(client, every_page(), on)
        if value.decode(errors="replace") in ODD_NUMBERS:  # what the scripts compute with
            _act_everywhere(client, dashboard_redis, keyspace, break_it, on)


def test_every_field_of_every_kind_of_event_holding_each_odd_value(
    dashboard_redis: Redis, seeded: tuple[Client, Seeded]
) -> None:
    """Point 9's class (an events entry with "delay ²"): each field alone in an
    entry of each kind, since the first field a page looks for decides what it
    shows of the rest."""
    client, keyspace = seeded
    for value in _odd_values():
        _restore(dashboard_redis, keyspace.dumps)
        pipe = dashboard_redis.pipeline(transaction=False)
        # Fewer entries than a page shows (50), so that every one is drawn.
        for event in EVENTS:
            pipe.xadd(KEYS.events, {b"event": event.encode(), b"jobId": value})
        for at, name in enumerate(EVENT_FIELDS[1:]):
            entry = {b"event": EVENTS[at % len(EVENTS)].encode(), b"jobId": b"1"}
            pipe.xadd(KEYS.events, {**entry, name.encode(): value})
        pipe.execute()
        TALLY.keys[KEYS.events] += 1
        TALLY.values += len(EVENTS) + len(EVENT_FIELDS) - 1
        _render(client, EVENT_PAGES, f"with an event field = {value[:40]!r}")


def test_every_member_of_every_sorted_set_scored_as_no_clock_would(
    dashboard_redis: Redis, seeded: tuple[Client, Seeded]
) -> None:
    """A finish time of +inf or 1e308: int() of it failed the lists and the error groups."""
    client, keyspace = seeded
    zsets = [key for key, kind in keyspace.kinds.items() if kind == "zset"]
    for score in SCORES:

        def break_it(score: float = score) -> None:
            for key in zsets:
                members = dashboard_redis.zrange(key, 0, -1)
                if members:
                    dashboard_redis.zadd(key, dict.fromkeys(members, score))  # type: ignore[arg-type]
                TALLY.keys[key.decode()] += 1
                TALLY.values += len(members)

        on = f"with every score = {score}"
        _restore(dashboard_redis, keyspace.dumps)
        break_it()
        _render(client, every_page(), on)
        _act_everywhere(client, dashboard_redis, keyspace, break_it, on)


def test_every_seeded_key_is_in_a_group(seeded: tuple[Client, Seeded]) -> None:
    for key in seeded[1].dumps:
        groups = [name for name, holds in KEY_GROUPS.items() if holds(key.decode())]
        assert len(groups) == 1, (key, groups)


@pytest.mark.parametrize("group", list(KEY_GROUPS))
@FUZZ
@given(data=st.data())
def test_no_page_or_action_fails_on_a_queue_whose_keys_hold_anything(
    dashboard_redis: Redis, seeded: tuple[Client, Seeded], group: str, data: st.DataObject
) -> None:
    client, keyspace = seeded
    _restore(dashboard_redis, keyspace.dumps)
    keys = sorted(key for key in keyspace.dumps if KEY_GROUPS[group](key.decode()))
    strategy = corruptions(keys, keyspace.kinds, keyspace.fields)
    broken = data.draw(st.lists(strategy, min_size=1, max_size=3))
    for key, how, what in broken:
        _corrupt(dashboard_redis, key, how, what)
    on = f"on {[(key, how) for key, how, _ in broken]}"
    for _ in range(4):
        method, url, body = data.draw(requests(), label="request")
        before = _state_of_everything(dashboard_redis)
        _answered(client, method, url, body, on)
        if method == "POST":
            _assert_nothing_lost_or_doubled(f"{method} {url} {body} {on}", before, dashboard_redis)
