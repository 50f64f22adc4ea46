"""Generated requests against the API and the pages (seeded: the same inputs
on every run): no 5xx, every /api/ answer JSON with the documented error
shape, and nothing half-moved — after every request each job is in exactly
one state, and a refused request changed no count at all.

Inputs mix the shapes the dashboard expects with what an attacker sends:
odd queue names and job ids (``~``-escapes, NUL, broken UTF-8, 10,000
characters), every query parameter with numbers too large or negative, JSON
bodies nested deep, with Infinity, NaN, 1e400, half characters, form and
multipart bodies, wrong methods, missing CSRF tokens, and three kinds of user.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import quote, unquote, urlencode

import pytest
from django.test import Client
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from redis import Redis

from queues.read.refs import QueueRef
from tests.dashboard_seed import seed_job

KEYS = QueueRef("bull", "emails").keys
SEEDED = {
    "wait": 6, "prioritized": 3, "delayed": 4, "active": 3,
    "waiting-children": 2, "completed": 6, "failed": 6,
}  # fmt: skip
JOB_IDS = [str(n) for n in range(1, sum(SEEDED.values()) + 1)]
LISTS = ("wait", "paused", "active")
ZSETS = ("prioritized", "delayed", "completed", "failed", "waiting-children")
FUZZ = settings(
    max_examples=1000,
    derandomize=True,  # the same inputs on every run, so a failure is reproducible
    database=None,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)

ODD_TEXT = [
    "", " ", "0", "-1", "1", "49", "500", "501", "99999999999999999999", "9" * 5000,
    "1e400", "Infinity", "NaN", "-0", "0x10", "1.5", "true", "null", "[]", "{}",
    "\x00", "a\x00b", "\ud800", "\U0001f4a5", "é", "~s", "~~", "~x", "..", "../..",
    "a:b", "{tag}", "x" * 10_000, "<script>alert(1)</script>", "' OR 1=1 --", "\r\n",
    "18446744073709551616-0", "1-0", "0-0", "failed", "wait", "completed", "delayed",
]  # fmt: skip
# Raw percent-escapes a path segment may carry: NUL, broken UTF-8, a surrogate, dots.
ODD_ESCAPES = ["%00", "%ff", "%ED%A0%80", "%2e%2e", "%2F", "%25", "%7e"]
states = st.sampled_from([*SEEDED, "paused", "bogus", ""])
odd_text = st.one_of(st.sampled_from(ODD_TEXT), st.text(max_size=30))


def _segment_text(text: str) -> str:
    # Lone surrogates cannot be percent-encoded as UTF-8; send them as broken bytes.
    return quote(text.encode("utf-8", "surrogatepass"), safe="~")


segments = st.one_of(
    st.sampled_from(["emails", "bull", "nope", "1", "5", "~s", "~~x"]),
    st.sampled_from(ODD_ESCAPES),
    odd_text.map(_segment_text),
)
queue_parts = st.one_of(
    st.just(("bull", "emails")), st.tuples(segments, st.sampled_from(["emails", "nope"]))
)
job_ids = st.one_of(st.sampled_from(JOB_IDS), segments)
json_leaf = st.one_of(st.none(), st.booleans(), st.integers(), st.floats(allow_nan=False), odd_text)
json_values = st.recursive(
    json_leaf,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(odd_text, inner, max_size=4),
    max_leaves=12,
)
ACTION_WORDS = [
    "retry", "promote", "fail", "remove", "retry_all", "promote_all", "clean", "pause",
    "resume", "frobnicate", "",
]  # fmt: skip
action_bodies = st.fixed_dictionaries(
    {},
    optional={
        "action": st.one_of(st.sampled_from(ACTION_WORDS), json_values),
        "ids": st.one_of(st.lists(job_ids, max_size=5), json_values),
        "id": job_ids,
        "state": st.one_of(states, json_values),
        "reason": odd_text,
        "grace_ms": st.one_of(st.sampled_from([0, 1000, -1, 10**20]), json_values),
        "next": st.sampled_from(["/", "//evil.example", "https://evil.example/", "/queues/"]),
    },
)
# JSON text no encoder writes, but a client can send.
RAW_JSON = [
    "[" * 100_000, "{" * 50_000, '{"a":' * 3000 + "1" + "}" * 3000,
    '{"action": "clean", "state": "failed", "grace_ms": Infinity}',
    '{"action": "clean", "state": "failed", "grace_ms": NaN}',
    '{"action": "clean", "state": "failed", "grace_ms": 1e400}',
    '{"action": "clean", "state": "failed", "grace_ms": -1e400}',
    '{"action": "retry", "ids": ["\\ud800"]}',
    '{"action": "fail", "ids": ["1"], "reason": "\\udfff"}',
    '{"action": "retry", "ids": [' + "1" * 5000 + "]}", "\xff\xfe", "", "null", "[]", "1",
]  # fmt: skip
BROKEN_MULTIPART = ["--x\r\n", "--x\r\nContent-Disposition: form-data\r\n\r\n", "--x--"]
ROLES = ["anonymous", "viewer", "actor", "actor-csrf"]
FORM_FIELDS = ["action", "ids", "state", "grace_ms", "reason", "next", "username", "password"]
QUERY_NAMES = [
    "state", "start", "end", "logs_start", "logs_size", "full", "before", "count", "type",
    "job", "size", "page", "logs", "fragment", "sort", "next", "x",
]  # fmt: skip
queries = st.dictionaries(
    st.sampled_from(QUERY_NAMES), st.one_of(states, odd_text, st.sampled_from(["1", "data"])),
    max_size=4,
)  # fmt: skip
methods = st.sampled_from(["GET", "GET", "GET", "POST", "POST", "PUT", "DELETE", "HEAD", "PATCH"])


@dataclass
class Fuzzed:
    method: str
    path: str
    role: str
    body: bytes = b""
    content_type: str = "application/octet-stream"
    headers: dict[str, str] = field(default_factory=dict)

    def __str__(self) -> str:
        return f"{self.role} {self.method} {self.path[:300]} {self.body[:300]!r}"


@st.composite
def bodies(draw: st.DrawFn) -> tuple[bytes, str]:
    kind = draw(st.sampled_from(["json", "json", "raw-json", "form", "multipart", "text"]))
    if kind == "json":
        return json.dumps(draw(action_bodies)).encode(), "application/json"
    if kind == "raw-json":
        text = draw(st.sampled_from(RAW_JSON))
        return text.encode("utf-8", "surrogatepass"), "application/json"
    if kind == "form":
        fields = draw(st.dictionaries(st.sampled_from(FORM_FIELDS), odd_text, max_size=5))
        encoded = urlencode({k: v.encode("utf-8", "surrogatepass") for k, v in fields.items()})
        return encoded.encode(), "application/x-www-form-urlencoded"
    if kind == "multipart":
        broken = draw(st.sampled_from(BROKEN_MULTIPART))
        content_type = draw(
            st.sampled_from(["multipart/form-data; boundary=x", "multipart/form-data"])
        )
        return broken.encode(), content_type
    return draw(odd_text).encode("utf-8", "surrogatepass"), "text/plain"


def _paths(draw: st.DrawFn, kind: str) -> list[str]:
    prefix, name = draw(queue_parts)
    if kind == "api":
        base = f"/api/queues/{prefix}/{name}/"
        return [
            "/api/queues/", base, base + "jobs/", base + "events/", base + "actions/",
            base + "bulk/", base + "job/" + draw(job_ids), "/api/" + draw(segments),
            base + draw(segments) + "/", "/api/queues/" + draw(segments),
        ]  # fmt: skip
    base = f"/queues/{prefix}/{name}/"
    return [
        "/", base, base + "events/", base + "goto/", base + "actions/", base + "bulk/",
        base + "job/" + draw(job_ids), "/login/", "/logout/", "/static/" + draw(segments),
        "/static/../dashboard/settings.py", "/" + draw(segments) + "/",
    ]  # fmt: skip


@st.composite
def fuzzed_requests(draw: st.DrawFn, kind: str) -> Fuzzed:
    """A request to the API (``kind`` "api") or to the pages."""
    path = draw(st.sampled_from(_paths(draw, kind)))
    method = draw(methods)
    query = draw(queries)
    if query:
        path += "?" + urlencode({k: v.encode("utf-8", "surrogatepass") for k, v in query.items()})
    request = Fuzzed(method, path, draw(st.sampled_from(ROLES)))
    if method in ("POST", "PUT", "PATCH"):
        request.body, request.content_type = draw(bodies())
    if draw(st.booleans()):
        request.headers["HTTP_HX_REQUEST"] = "true"
    return request


def _jobs_by_state(client: Redis) -> dict[str, set[str]]:
    pipe = client.pipeline(transaction=False)
    for state in LISTS:
        pipe.lrange(KEYS.state(state), 0, -1)
    for state in ZSETS:
        pipe.zrange(KEYS.state(state), 0, -1)
    replies = pipe.execute()
    return {
        state: {member.decode() for member in reply}
        for state, reply in zip((*LISTS, *ZSETS), replies, strict=True)
    }


def _existing_jobs(client: Redis) -> set[str]:
    pipe = client.pipeline(transaction=False)
    for job_id in JOB_IDS:
        pipe.exists(KEYS.job(job_id))
    return {job_id for job_id, found in zip(JOB_IDS, pipe.execute(), strict=True) if found}


def _assert_nothing_half_moved(client: Redis, request: Fuzzed) -> dict[str, set[str]]:
    by_state = _jobs_by_state(client)
    places: dict[str, list[str]] = {}
    for state, members in by_state.items():
        for job_id in members:
            places.setdefault(job_id, []).append(state)
    misplaced = {job_id: where for job_id, where in places.items() if len(where) != 1}
    existing = _existing_jobs(client)
    homeless = existing - set(places)
    assert not misplaced, f"{request}: jobs in more than one state: {misplaced}"
    assert not homeless, f"{request}: jobs in no state: {homeless}"
    return by_state


def _seed(client: Redis) -> None:
    client.flushall()
    ids = iter(JOB_IDS)
    for state, count in SEEDED.items():
        for _ in range(count):
            seed_job(client, KEYS, next(ids), state=state)


@pytest.fixture
def clients(
    dashboard_redis: Redis, make_user: Callable[..., Any], settings: Any
) -> dict[str, Client]:
    # Logins in the fuzz must not spend a third of a second each hashing.
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]
    _seed(dashboard_redis)
    viewer, actor = Client(), Client()
    viewer.force_login(make_user("viewer"))
    actor_user = make_user("actor")
    actor.force_login(actor_user)
    strict = Client(enforce_csrf_checks=True)
    strict.force_login(actor_user)
    return {"anonymous": Client(), "viewer": viewer, "actor": actor, "actor-csrf": strict}


def _send(clients: dict[str, Client], request: Fuzzed) -> Any:
    client = clients[request.role]
    client.raise_request_exception = False  # a crash is a 500 to assert on, not an error here
    return client.generic(
        request.method,
        request.path,
        request.body,
        content_type=request.content_type,
        **request.headers,
    )


def _check(dashboard_redis: Redis, clients: dict[str, Client], request: Fuzzed) -> None:
    before = _jobs_by_state(dashboard_redis)
    if sum(len(members) for members in before.values()) < len(JOB_IDS) // 2:
        _seed(dashboard_redis)  # successful removes and cleans have emptied the queue
        before = _jobs_by_state(dashboard_redis)
    response = _send(clients, request)
    status = response.status_code
    assert status < 500, f"{request}: {status}"
    after = _assert_nothing_half_moved(dashboard_redis, request)
    if status >= 400:
        assert after == before, f"{request}: refused ({status}) but jobs moved"
    if request.path.startswith("/api/"):
        assert response["Content-Type"] == "application/json", f"{request}: {status}"
        if request.method == "HEAD":
            return
        body = json.loads(response.content)
        assert isinstance(body, dict), request
        if status >= 400:
            error = body["error"]
            assert isinstance(error, dict), request
            assert isinstance(error["code"], str), request
            assert error["code"], request
            assert isinstance(error["message"], str), request
            assert error["message"], request


@pytest.mark.parametrize("kind", ["api", "pages"])
@FUZZ
@given(data=st.data())
def test_fuzzed_requests(
    dashboard_redis: Redis, clients: dict[str, Client], kind: str, data: st.DataObject
) -> None:
    _check(dashboard_redis, clients, data.draw(fuzzed_requests(kind), label="request"))


# Every whole number a request carries (issue 22): its query parameter or form
# field, where it is one. Each goes through queues.numerals.parse_whole.
NUMBERS_IN = [
    ("GET", "/api/queues/bull/emails/jobs/?state=failed", "start"),
    ("GET", "/api/queues/bull/emails/jobs/?state=failed", "end"),
    ("GET", "/api/queues/bull/emails/job/1", "logs_start"),
    ("GET", "/api/queues/bull/emails/job/1", "logs_size"),
    ("GET", "/api/queues/bull/emails/events/", "count"),
    ("GET", "/api/queues/bull/emails/events/", "before"),
    ("GET", "/api/queues/bull/emails/schedulers/", "end"),
    ("GET", "/api/queues/bull/emails/cohorts/", "count"),
    ("GET", "/api/queues/bull/emails/search/?state=failed&q=name+~+x", "rows"),
    ("GET", "/api/queues/bull/emails/search/?state=wait&q=name+~+x&search=s", "cursor"),
    ("GET", "/api/queues/bull/emails/flow-children/1", "page"),
    ("GET", "/queues/bull/emails/flow-children/1", "page"),
    ("GET", "/queues/bull/emails/search/?state=failed&q=data+~+x&search=s", "cursor"),
    ("GET", "/queues/bull/emails/?state=failed", "page"),
    ("GET", "/queues/bull/emails/?state=failed", "size"),
    ("GET", "/queues/bull/emails/job/1", "logs"),
    ("GET", "/queues/bull/emails/events/", "before"),
    ("GET", "/queues/bull/emails/schedulers/", "page"),
    ("GET", "/queues/bull/emails/errors/", "page"),
    ("GET", "/", "page"),
    ("POST", "/queues/bull/emails/add/?name=send&data=%7B%7D", "delay"),
    ("POST", "/queues/bull/emails/add/?name=send&data=%7B%7D", "attempts"),
    ("POST", "/queues/bull/emails/add/?name=send&data=%7B%7D", "priority"),
    ("POST", "/queues/bull/emails/bulk/?action=clean&state=failed", "grace_ms"),
    ("POST", "/api/queues/bull/emails/bulk/?action=clean&state=failed", "grace_ms"),
    ("POST", "/api/queues/bull/emails/concurrency/", "concurrency"),
    ("POST", "/queues/bull/emails/concurrency/", "concurrency"),
]
# Digits that are no ASCII digits, numbers past what Redis or Lua hold, and
# cursors and page tokens built of them.
ODD_NUMBERS = [
    "²", "\u0661\u0662", "1_000", "+7", " 7", "7\u00a0", "0x10", "1e3", "-1", "",
    "99999999999999999999", "18446744073709551616", "9" * 5000, "².0.0", "0.\u0663.0",
    "0.18446744073709551616.0", "0|999999999999999999999999|0|200|", "0|²|0|200|",
    "\u0660|0|0|200|", "0|0|0|²|", "1-²", "²-0",
]  # fmt: skip
numbers = st.one_of(
    st.text(st.characters(categories=["Nd", "No"]), max_size=8),
    st.integers().map(str),
    odd_text,
)


def _number_in(where: tuple[str, str, str], number: str) -> Fuzzed:
    """The request of ``where`` (method, URL, the parameter) carrying ``number``."""
    method, url, name = where
    path, _, query = url.partition("?")
    fields = dict(pair.split("=", 1) for pair in query.split("&") if pair)
    fields = {key: unquote(value) for key, value in fields.items()} | {name: number}
    if method == "GET":
        return Fuzzed(method, path + "?" + urlencode(_sendable(fields)), "actor")
    if path.startswith("/api/"):
        return Fuzzed(method, path, "actor", json.dumps(fields).encode(), "application/json")
    body = urlencode(_sendable(fields)).encode()
    return Fuzzed(method, path, "actor", body, "application/x-www-form-urlencoded")


def _sendable(fields: dict[str, str]) -> dict[str, bytes]:
    # Lone surrogates cannot be percent-encoded as UTF-8; sent as broken bytes.
    return {key: value.encode("utf-8", "surrogatepass") for key, value in fields.items()}


def test_every_number_a_request_carries_is_read_or_refused_never_a_500(
    dashboard_redis: Redis, clients: dict[str, Client]
) -> None:
    """Each odd number in each place (27 x 22 requests)."""
    for where in NUMBERS_IN:
        for number in ODD_NUMBERS:
            _check(dashboard_redis, clients, _number_in(where, number))


@settings(FUZZ, max_examples=300)
@given(where=st.sampled_from(NUMBERS_IN), number=numbers)
def test_any_text_for_a_number_is_read_or_refused_never_a_500(
    dashboard_redis: Redis, clients: dict[str, Client], where: tuple[str, str, str], number: str
) -> None:
    _check(dashboard_redis, clients, _number_in(where, number))
