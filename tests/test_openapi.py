"""The OpenAPI document (dashboard/openapi.py) is valid OpenAPI 3.1 and holds
for the API's real answers.

Every endpoint is called through the Django test client against a real Redis
with seeded jobs, as each kind of user, with good and bad input, with Redis
full, gone, and with a view crashing: every documented status of every
operation is provoked. openapi-core checks each answer (status, content type,
headers, body) against the document, whose objects are closed: a field, a
status or a content type the document lacks fails. The statuses seen must be
exactly those documented, and every URL of the API must have an operation.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable
from dataclasses import KW_ONLY, dataclass, field, replace
from functools import partial
from typing import Any
from urllib.parse import unquote, urlencode

import msgspec
import pytest
import schemathesis
from django.conf import settings as django_settings
from django.core.exceptions import RequestDataTooBig
from django.core.wsgi import get_wsgi_application
from django.test import Client
from django.urls import URLPattern, get_resolver, include, path, reverse
from hypothesis import HealthCheck, given
from hypothesis import settings as hypothesis_settings
from hypothesis import strategies as st
from jsonschema import Draft202012Validator
from openapi_core import OpenAPI
from openapi_core.contrib.django import DjangoOpenAPIRequest, DjangoOpenAPIResponse
from openapi_core.exceptions import OpenAPIError
from openapi_spec_validator import OpenAPIV31SpecValidator
from redis import Redis
from referencing import Registry, Resource
from referencing.jsonschema import DRAFT202012
from schemathesis.checks import not_a_server_error
from schemathesis.specs.openapi.checks import (
    content_type_conformance,
    response_headers_conformance,
    response_schema_conformance,
    status_code_conformance,
)

from dashboard.acting.cohort_record import record_cohort
from dashboard.core import answers as dashboard_answers
from dashboard.core import permissions
from dashboard.openapi import OpenAPIDocument, operation_of
from dashboard.search import views as search
from dashboard.shared import bodies
from dashboard.urls import api_patterns
from queues import discovery
from queues.read import answers
from queues.read.error_folding import NO_REASON, group_key
from queues.read.job import DATA_DISPLAY_LIMIT
from queues.read.refs import QueueRef
from queues.read.states import STATES
from queues.schedulers import JobSchedulers, Repeat
from tests.dashboard_seed import now_ms, seed_events, seed_job, seed_metrics
from tests.e2e.server import free_port
from tests.test_out_of_memory import redis_full

EMAILS = QueueRef("bull", "emails")
# A name with both characters the URL segments escape ('/' as ~s, '~' as ~~).
ODD = QueueRef("bull", "team/a~b")
# A queue whose wait key another writer turned into a set: moves into it are refused.
JAMMED = QueueRef("bull", "jammed")
# A queue whose failed set another writer turned into a string: no groups to read.
CROOKED = QueueRef("bull", "crooked")
CSRF_TOKEN = "k" * 32  # a CSRF secret as Django's cookie holds it


# The API's URL namespace (dashboard.urls), wherever the app's URLs are included.
API = "dashboard:api"
# Every documented API view, by URL name (each declares its operation).
OPERATIONS = {
    pattern.name: declared
    for pattern in api_patterns
    if isinstance(pattern, URLPattern) and (declared := operation_of(pattern))
}


def url(name: str, ref: QueueRef = EMAILS, **kwargs: str) -> str:
    needs_queue = name not in ("queues", "schema")
    queue = {"prefix": ref.prefix, "name": ref.name} if needs_queue else {}
    return reverse(f"{API}:{name}", kwargs={**queue, **kwargs})


def _client(user: Any | None, *, csrf: bool = True) -> Client:
    """A client that passes Django's real CSRF check the way the document says:
    the token in the CSRF cookie and in the header."""
    client = Client(enforce_csrf_checks=True, raise_request_exception=False)
    if user is not None:
        client.force_login(user)
    client.cookies[django_settings.CSRF_COOKIE_NAME] = CSRF_TOKEN
    if csrf:
        client.defaults[django_settings.CSRF_HEADER_NAME] = CSRF_TOKEN
    return client


class _Request(DjangoOpenAPIRequest):
    """openapi-core's view of a Django request. It reads the body even to check
    an answer; one over Django's limit is refused to every reader (the 413)."""

    @property
    def body(self) -> bytes:
        try:
            return super().body
        except RequestDataTooBig:
            return b""


@dataclass
class Checked:
    """Validates answers against the document and remembers which
    (path, method, status) each one was."""

    document: dict[str, Any]
    seen: set[tuple[str, str, str]] = field(default_factory=set)
    codes: set[str] = field(default_factory=set)

    def __post_init__(self) -> None:
        self.spec = OpenAPI.from_dict(self.document)
        self.server = self.document["servers"][0]["url"]

    def __call__(self, response: Any, status: int, *, valid_request: bool = True) -> Any:
        assert response.status_code == status, (status, response.content[:400])
        request = _Request(response.wsgi_request)
        # The answer must be one the document describes, exactly.
        self.spec.validate_response(request, DjangoOpenAPIResponse(response))
        if valid_request:
            # And a request made as the document says is one it accepts.
            self.spec.validate_request(request)
        template = request.path_pattern
        assert template is not None
        assert template.startswith(self.server)
        method = response.wsgi_request.method.lower()
        self.seen.add((template.removeprefix(self.server), method, str(status)))
        body = response.json()
        if isinstance(body, dict) and "error" in body:
            self.codes.add(body["error"]["code"])
        return body

    def documented(self) -> set[tuple[str, str, str]]:
        return {
            (path_, method, status)
            for path_, item in self.document["paths"].items()
            for method, operation in item.items()
            if method != "servers"  # a path's second server (other Redis connections)
            for status in operation["responses"]
        }


@pytest.fixture
def users(make_user: Callable[..., Any]) -> dict[str, Any]:
    return {role: make_user(role) for role in ("viewer", "actor", "editor", "nonstaff")}


@pytest.fixture
def document(users: dict[str, Any]) -> dict[str, Any]:
    response = _client(users["viewer"]).get(url("schema"))
    assert response.status_code == 200
    assert response["Content-Type"] == "application/json"
    answer: dict[str, Any] = response.json()
    return answer


def _seed(client: Redis) -> None:
    """Jobs in every state and shape the answers have branches for."""
    keys = EMAILS.keys
    seed_job(client, keys, "w1", data={"to": "a@example.com"})
    seed_job(client, keys, "raw", fields={"data": "not json", "opts": "{not json"})
    seed_job(client, keys, "big", data={"blob": "x" * (DATA_DISPLAY_LIMIT + 10)})
    seed_job(client, keys, "p1", state="prioritized", opts={"priority": 5})
    seed_job(client, keys, "d1", state="delayed")
    seed_job(
        client, keys, "a1", state="active", fields={"progress": json.dumps({"step": 1, "of": 4})}
    )
    client.set(keys.lock("a1"), "worker-token", px=30_000)
    seed_job(client, keys, "parent", state="waiting-children")
    client.sadd(keys.dependencies("parent"), keys.job("child1"))
    client.hset(keys.processed("parent"), keys.job("child0"), json.dumps("done"))
    seed_job(
        client,
        keys,
        "child1",
        state="completed",
        fields={
            "parentKey": keys.job("parent"),
            "parent": json.dumps({"id": "parent", "queueKey": keys.base.rstrip(":")}),
            "progress": "42",
            "somethingElse": "kept in extra",
        },
    )
    seed_job(client, keys, "c2", state="completed")
    for job_id in ("f1", "f2", "f3", "f4"):
        seed_job(client, keys, job_id, state="failed", opts={"attempts": 3})
    client.rpush(keys.logs("f1"), "starting", "sending")
    # A failed job whose key another writer replaced: single actions refuse
    # it, bulk actions skip it.
    client.zadd(keys.failed, {"broken": now_ms()})
    client.set(keys.job("broken"), "not a hash")
    seed_events(
        client,
        keys,
        [("added", {"jobId": "w1", "name": "task"}), ("failed", {"jobId": "f1"}), ("drained", {})],
    )
    seed_metrics(client, keys, [1, 2, 3], [0, 1, 0], now_ms())
    seed_job(client, ODD.keys, "batch/7")  # a '/' in a job id: it takes the rest of the path
    seed_job(client, JAMMED.keys, "1", state="failed")
    schedulers = JobSchedulers(EMAILS.name, client)
    schedulers.upsert("nightly", Repeat(pattern="0 3 * * *", tz="UTC"), name="report", data={})
    schedulers.upsert("beat", Repeat(every_ms=60_000, limit=5), name="ping", data={"n": 1})
    schedulers.upsert("bad", Repeat(every_ms=60_000), name="b", data={"x": 1})
    client.hset(EMAILS.keys.repeat_scheduler("bad"), mapping={"data": "{oops", "every": "soon"})
    # A legacy repeatable job of the oldest kind: only its member spells it.
    client.zadd(EMAILS.keys.repeat, {"sweep::::*/5 * * * *": now_ms() + 60_000})
    client.delete(JAMMED.keys.wait)
    client.sadd(JAMMED.keys.wait, "not a list")
    _seed_cohorts(client)
    # A queue whose failed set another writer replaced: its error groups are a 409.
    seed_job(client, CROOKED.keys, "1")
    client.set(CROOKED.keys.failed, "not a zset")


# A cohort id nobody recorded (well-formed: the request itself is valid).
NO_COHORT = "1700000000000-0000abcd"


def _seed_cohorts(client: Redis) -> None:
    """A recent retry (what became of it), and a record another writer broke."""
    reasons = {"f1": "boom", "f2": "boom"}  # what they fail with now: "same reason"
    record_cohort(
        client,
        EMAILS,
        "retry",
        ["f1", "f2", "w1"],
        user="u",
        at_ms=now_ms(),
        source="failed",
        previous_reasons=reasons,
    )
    earlier = now_ms() - 60_000
    broken = f"{earlier:013d}-0000beef"
    client.set(EMAILS.keys.cohort(broken), b"not a record")
    client.zadd(EMAILS.keys.cohort_index(), {broken: earlier})


V, A, E = "viewer", "actor", "editor"  # who asks: a key of the users fixture (None: nobody)


@dataclass(frozen=True)
class Ask:
    """One call of an operation and the answer it must get: a GET sends
    ``given`` as its query, a POST as its body (JSON, or a form)."""

    who: str | None
    name: str  # the operation's URL name
    status: int
    given: dict[str, Any] = field(default_factory=dict)
    _: KW_ONLY
    code: str = ""  # the error code the answer must carry
    then: Callable[[Any], object] | None = None  # holds for the body
    valid: bool = True  # the request is one the document accepts
    form: bool = False
    csrf: bool = True
    ref: QueueRef = EMAILS
    job_id: str | None = None
    cohort_id: str | None = None
    group: str | None = None
    connection: str | None = None  # another Redis connection's


@dataclass
class Api:
    """Sends asks as their users and checks each answer against the document."""

    check: Checked
    users: dict[str, Any]
    clients: dict[tuple[str | None, bool], Client] = field(default_factory=dict)

    def __call__(self, ask: Ask) -> Any:
        key = (ask.who, ask.csrf)
        if key not in self.clients:
            self.clients[key] = _client(ask.who and self.users[ask.who], csrf=ask.csrf)
        client = self.clients[key]
        at = {name: getattr(ask, name) for name in ("job_id", "cohort_id", "group", "connection")}
        target = url(ask.name, ask.ref, **{k: v for k, v in at.items() if v is not None})
        if OPERATIONS[ask.name].body is None:
            response = client.get(target, ask.given)
        elif ask.form:
            form = urlencode(ask.given, doseq=True)
            response = client.post(target, form, content_type="application/x-www-form-urlencoded")
        else:
            response = client.post(target, json.dumps(ask.given), content_type="application/json")
        body = self.check(response, ask.status, valid_request=ask.valid)
        if ask.code:
            assert body["error"]["code"] == ask.code, (ask, body)
        assert ask.then is None or ask.then(body), (ask, body)
        return body

    def all(self, asks: Iterable[Ask], **change: Any) -> None:
        for ask in asks:
            self(replace(ask, **change))


# In order: the actions change the seeded jobs the later asks find.
READS = [
    Ask(V, "queues", 200),
    Ask(V, "schema", 200),
    Ask(V, "queue", 200),
    Ask(V, "queue", 200, ref=ODD, then=lambda body: body["name"] == ODD.name),
    Ask(V, "job", 200, ref=ODD, job_id="batch/7", then=lambda body: body["id"] == "batch/7"),
    # Something seeded in every state: no state's rows go unchecked.
    *(Ask(V, "jobs", 200, {"state": state}, then=lambda body: body["jobs"]) for state in STATES),
    Ask(V, "jobs", 200, {"state": "failed", "start": 1, "end": 2}),
    Ask(V, "jobs", 400, {"state": "bogus"}, valid=False),
    Ask(V, "jobs", 400, {"start": 5, "end": 1}),
    *(
        Ask(V, "job", 200, job_id=job_id, then=lambda body, job_id=job_id: body["id"] == job_id)
        for job_id in ("w1", "raw", "big", "p1", "d1", "a1", "parent", "child1", "f1")
    ),
    Ask(V, "job", 404, job_id="broken"),  # not a hash: no job to show
    Ask(V, "job", 200, {"full": "1"}, job_id="big", then=lambda body: body["data"] is not None),
    Ask(V, "job", 200, {"logs_start": 1, "logs_size": 1}, job_id="f1"),
    Ask(V, "job", 404, job_id="gone"),
    Ask(V, "job", 404, job_id="a:b", valid=False),
    Ask(V, "events", 200, {"job": "w1"}),
    Ask(V, "events", 400, {"before": "yesterday"}, valid=False),
    Ask(V, "workers", 200),
    Ask(V, "limits", 200),
    Ask(V, "cohort", 404, cohort_id=NO_COHORT),
    Ask(V, "error_group_jobs", 200, group="0" * 16),
    Ask(V, "error_group_jobs", 404, group="nope", valid=False),
    Ask(V, "error_groups", 409, ref=CROOKED, code="corrupt_key"),
    Ask(V, "flow", 200, job_id="w1", then=lambda body: body == {"flow": None}),
    Ask(V, "flow", 404, job_id="gone"),
    Ask(V, "flow_children", 200, {"page": "3.0.0"}, job_id="parent"),
    Ask(V, "flow_children", 400, {"page": "x"}, job_id="parent", valid=False),
    Ask(V, "flow_children", 404, job_id="gone"),
    Ask(V, "schedulers", 200, {"start": 1, "end": 2}),
    Ask(V, "schedulers", 400, {"start": 5, "end": 1}),
]
# Each operation's asks, as the user who may.
job_action = partial(Ask, A, "job_actions")
queue_action = partial(Ask, A, "queue_actions")
concurrency = partial(Ask, A, "global_concurrency")
scheduler_action = partial(Ask, A, "scheduler_actions")
edit, duplicate, add = (
    partial(Ask, E, name) for name in ("edit_job_data", "duplicate_job", "add_job")
)
JOB_ACTIONS = [
    job_action(200, {"action": "retry", "ids": ["f1"]}, then=lambda body: body["count"] == 1),
    job_action(409, {"action": "retry", "id": "f1"}, code="job_not_in_state"),
    job_action(
        200,
        {"action": "retry", "ids": ["f2", "gone"]},
        then=lambda body: [result["ok"] for result in body["results"]] == [True, False],
    ),
    job_action(404, {"action": "remove", "ids": ["gone"]}, code="job_not_exist"),
    job_action(409, {"action": "retry", "ids": ["broken"]}, code="job_broken"),
    job_action(200, {"action": "promote", "ids": ["d1"]}, form=True),
    job_action(200, {"action": "fail", "ids": ["w1", "p1"], "reason": "stop"}, form=True),
    job_action(200, {"action": "retry", "ids": ["child1"], "state": "completed"}),
    job_action(400, {"action": "explode", "ids": ["f3"]}, valid=False),
    job_action(400, {"action": "retry", "ids": []}, valid=False),
    job_action(409, {"action": "retry", "ids": ["1"]}, ref=JAMMED, code="corrupt_key"),
]
QUEUE_ACTIONS = [
    queue_action(
        200,
        {"action": "retry_all", "state": "failed"},
        then=lambda body: [job["id"] for job in body["skipped"]] == ["broken"],
    ),
    queue_action(200, {"action": "promote_all"}, form=True),
    queue_action(200, {"action": "clean", "state": "completed", "grace_ms": "0"}, form=True),
    queue_action(200, {"action": "clean", "grace_ms": 0}),
    queue_action(200, {"action": "pause"}),
    queue_action(200, {"action": "resume"}),
    queue_action(400, {"action": "clean"}, valid=False),
    queue_action(409, {"action": "retry_all"}, ref=JAMMED, code="corrupt_key"),
    concurrency(200, {"concurrency": 3}, then=lambda body: body["count"] == 0),
    concurrency(200, {"concurrency": "none"}, form=True),
    concurrency(200, {"concurrency": None}),
    concurrency(400, {"concurrency": 0}, valid=False),
    concurrency(400, {}, valid=False),
    concurrency(409, {"concurrency": 2}, ref=JAMMED, code="corrupt_key"),
    scheduler_action(
        200, {"action": "run_now", "id": "beat"}, then=lambda body: body["count"] == 1
    ),
    scheduler_action(200, {"action": "remove", "id": "nightly"}, form=True),
    scheduler_action(404, {"action": "remove", "id": "nightly"}, code="scheduler_not_exist"),
    scheduler_action(409, {"action": "run_now", "id": "bad"}, code="scheduler_broken"),
    scheduler_action(409, {"action": "run_now", "id": "beat"}, ref=JAMMED, code="corrupt_key"),
    scheduler_action(400, {"action": "explode", "id": "beat"}, valid=False),
]
# Edit data, duplicate, add (dashboard.change_jobs): each answer they give.
CHANGES = [
    edit(200, {"id": "f4", "data": {"to": "b"}}, then=lambda body: body["action"] == "edit_data"),
    edit(200, {"id": "f4", "data": '{"to": "c"}'}, form=True),
    duplicate(201, {"id": "w1"}, then=lambda body: body["source"] == "w1"),
    duplicate(201, {"id": "w1"}, form=True),
    add(201, {"name": "send", "data": {"n": 1}, "opts": {"delay": 10, "attempts": 2}}),
    add(201, {"name": "send", "opts": '{"priority": 3}'}, form=True),
    edit(400, {"id": "f4", "data": "{nope"}, form=True, valid=False),
    duplicate(400, {"id": "a:b"}, form=True, valid=False),
    add(400, {"name": "send", "data": "{nope"}, form=True, valid=False),
    add(400, {"name": "send", "opts": {"parent": {}}}, valid=False),
    edit(404, {"id": "gone", "data": {}}, code="job_not_exist"),
    duplicate(404, {"id": "gone"}),
    edit(409, {"id": "a1", "data": {}}, code="job_not_in_state"),
    duplicate(409, {"id": "broken"}, code="job_broken"),
    add(409, {"name": "send"}, ref=JAMMED, code="corrupt_key"),
]
# One ask of each operation (a GET as the viewer, a POST as one who may), for what
# every operation answers alike: not logged in, forbidden, too large, Redis full or
# gone, a bug. "broken" is the one failed job left by then, alone in its group.
GETS = [
    *(Ask(V, name, 0) for name in ("queue", "jobs", "events", "schedulers", "workers")),
    *(Ask(V, name, 0) for name in ("limits", "cohorts", "search", "error_groups")),
    *(Ask(V, name, 0, job_id="f3") for name in ("job", "flow", "flow_children")),
    Ask(V, "cohort", 0, cohort_id=NO_COHORT),
    Ask(V, "error_group_jobs", 0, group="0" * 16),
    Ask(V, "queues", 0),
    Ask(V, "schema", 0),  # the one that needs no Redis
]
POSTS = [
    Ask(A, "job_actions", 0, {"action": "retry", "ids": ["f3"]}),
    Ask(A, "queue_actions", 0, {"action": "retry_all"}),
    Ask(A, "global_concurrency", 0, {"concurrency": 2}),
    Ask(A, "scheduler_actions", 0, {"action": "run_now", "id": "beat"}),
    Ask(A, "search_act", 0, {"action": "retry", "state": "failed", "ids": ["f3"]}),
    Ask(A, "error_group_actions", 0, {"action": "retry", "group": group_key(NO_REASON)}),
    Ask(E, "edit_job_data", 0, {"id": "f4", "data": {"to": "d"}}),
    Ask(E, "duplicate_job", 0, {"id": "w1"}),
    Ask(E, "add_job", 0, {"name": "send"}),
]


def _dynamic_reads(api: Api) -> None:
    """The reads whose request takes a value from an earlier answer."""
    page = api(Ask(V, "events", 200, {"count": 1}))
    api(Ask(V, "events", 200, {"before": page["next_before"], "type": "failed"}))
    cohorts = api(Ask(V, "cohorts", 200, {"count": 3}))["cohorts"]
    assert [bool(cohort["problem"]) for cohort in cohorts] == [False, True]
    recorded = cohorts[0]["id"]
    one = api(Ask(V, "cohort", 200, {"part": "failed"}, cohort_id=recorded))
    assert (one["total"], one["cohort"]["breakdown"]["failed_same"]) == (2, 2)
    api(Ask(V, "cohort", 200, {"part": "wait", "count": 1}, cohort_id=recorded))
    api(Ask(V, "cohort", 400, {"part": "bogus"}, cohort_id=recorded))
    api(Ask(V, "cohort", 404, cohort_id=cohorts[1]["id"]))
    grouped = api(Ask(V, "error_groups", 200))
    assert (grouped["complete"], grouped["indexed"], grouped["failed"]) == (True, 5, 5)
    first = grouped["groups"][0]["key"]
    page = api(Ask(V, "error_group_jobs", 200, {"start": 1, "size": 2}, group=first))
    assert len(page["jobs"]) == 2
    tree = api(Ask(V, "flow", 200, job_id="child1"))["flow"]
    assert [step["id"] for step in tree["path"]] == ["parent", "child1"]
    children = api(Ask(V, "flow_children", 200, job_id="parent"))["children"]
    assert {child["id"] for child in children} == {"child0", "child1"}
    listed = api(Ask(V, "schedulers", 200))["schedulers"]
    assert {row["kind"] for row in listed} == {"scheduler", "legacy"}
    assert any(row["notes"] for row in listed)


def _error_group_actions(api: Api, client: Redis) -> None:
    """After the job actions: f3 and f4 are still failed ("boom"), with "broken" beside them."""
    (group,) = [g for g in api(Ask(A, "error_groups", 200))["groups"] if g["text"] == "boom"]
    # A job of the group whose key another writer replaced once it was grouped:
    # the group's retry leaves it in failed and names it, in the documented shape.
    seed_job(client, EMAILS.keys, "f5", state="failed")
    api(Ask(A, "error_groups", 200))
    client.set(EMAILS.keys.job("f5"), "not a hash")
    retry = {"action": "retry", "group": group["key"]}
    done = api(Ask(A, "error_group_actions", 200, retry))
    assert (done["count"], done["moved_meanwhile"], done["left"]) == (2, 0, 0)
    assert done["broken"] == [skipped["id"] for skipped in done["skipped"]] == ["f5"]
    client.delete(EMAILS.keys.job("f5"))
    client.zrem(EMAILS.keys.failed, "f5")
    api(Ask(A, "error_group_actions", 400, retry))  # nothing left in it
    api(Ask(A, "error_group_actions", 400, {"action": "x", **retry}, valid=False))
    api(Ask(A, "error_group_actions", 400, {"action": "retry"}, valid=False))
    jammed = api(Ask(A, "error_groups", 200, ref=JAMMED))["groups"][0]["key"]
    jammed_retry = {"action": "retry", "group": jammed}
    api(Ask(A, "error_group_actions", 409, jammed_retry, ref=JAMMED, code="corrupt_key"))


def _searches(api: Api, client: Redis) -> None:
    """A search to its end, each way one is refused, and acting on its matches
    (jobs of its own: the steps after it use the seeded ones)."""
    for job_id in ("s1", "s2", "s3"):
        seed_job(client, EMAILS.keys, job_id, state="failed")
    client.zadd(EMAILS.keys.failed, {"s4": now_ms()})
    client.set(EMAILS.keys.job("s4"), "not a hash")
    query = {"state": "failed", "q": "name ~ a"}
    step = api(Ask(V, "search", 200, {**query, "rows": "1"}))
    while not step["done"]:
        more = {**query, "search": step["search"], "cursor": step["cursor"]}
        step = api(Ask(V, "search", 200, more))
    api(Ask(V, "search", 400, {"q": "x" * 1_000}, code="bad_query"))
    api(Ask(V, "search", 400, {"q": "name ~ a", "cursor": "forged"}, code="bad_query"))
    api(Ask(V, "search", 400, {"state": "nowhere", "q": "name ~ a"}, valid=False))
    user = permissions.user_label(api.users[V])
    search_id = search.SEARCHES.start(user)
    current = search.SEARCHES._by_user[user][search_id]
    with current.stepping:  # a step of this search still running
        api(Ask(V, "search", 429, {"q": "name ~ a", "search": search_id, "cursor": "0||0|10|"}))
    stale = {"q": "name ~ a", "search": "old", "cursor": "0||0|10|"}
    api(Ask(V, "search", 409, stale, code="search_replaced"))
    jammed = {"state": "wait", "q": "name ~ a"}
    api(Ask(V, "search", 409, jammed, ref=JAMMED, code="corrupt_key"))
    client.zrem(EMAILS.keys.failed, "s3")  # it moved meanwhile
    body = {"action": "remove", "state": "failed", "ids": ["s1", "s2", "s3", "s4"]}
    done = api(Ask(A, "search_act", 200, body))
    assert (done["count"], done["moved_meanwhile"], len(done["skipped"])) == (2, 1, 1)
    jammed_retry = {"action": "retry", "state": "failed", "ids": ["1"]}
    api(Ask(A, "search_act", 409, jammed_retry, ref=JAMMED))
    api(Ask(A, "search_act", 400, {"action": "fail", "ids": ["1"]}, valid=False))
    client.delete(EMAILS.keys.job("s4"))  # the broken one: later steps count the seeded ones
    client.zrem(EMAILS.keys.failed, "s4")


def _refusals(api: Api) -> None:
    """Who may not, requests refused before any view ran, and unknown queues."""
    nope = QueueRef("bull", "nope")
    api.all(GETS[:-2], status=404, ref=nope)
    api.all(POSTS, status=404, ref=nope)
    # Without the session cookie the request breaks the document's rules.
    api.all([*GETS, *POSTS], who=None, status=401, valid=False)
    api.all([*GETS, *POSTS], who="nonstaff", status=403)
    api.all(POSTS, who=V, status=403, code="forbidden")
    api.all(POSTS, csrf=False, status=403, valid=False, code="csrf_failed")


def _troubles(api: Api, client: Redis, settings: Any, monkeypatch: Any) -> None:
    """Bodies over the limits, Redis full, a view crashing, Redis gone: every operation."""
    limit = settings.DATA_UPLOAD_MAX_MEMORY_SIZE
    settings.DATA_UPLOAD_MAX_MEMORY_SIZE = 1_000
    for ask in POSTS:
        api(replace(ask, given={**ask.given, "padding": "x" * 2_000}, status=413, valid=False))
    settings.DATA_UPLOAD_MAX_MEMORY_SIZE = limit
    settings.ECHOMQ_MAX_JOB_DATA_BYTES = 100
    api(Ask(E, "edit_job_data", 413, {"id": "f4", "data": "x" * 200}, code="data_too_large"))
    api(Ask(E, "duplicate_job", 413, {"id": "big"}))
    api(Ask(E, "add_job", 413, {"name": "send", "data": "x" * 200}))
    del settings.ECHOMQ_MAX_JOB_DATA_BYTES
    with redis_full(client):
        api.all(POSTS, status=507, code="redis_out_of_memory")

    def crash(*args: Any) -> bool:
        raise RuntimeError("a bug")

    with monkeypatch.context() as patched:
        patched.setattr(permissions, "can_view", crash)
        api.all([*GETS, *POSTS], status=500)
    settings.REDIS_URL = f"redis://127.0.0.1:{free_port()}/0"
    discovery.clear_discovery_cache()
    api.all([*GETS[:-1], *POSTS], status=503)


def test_every_documented_answer_is_given_and_matches_the_document(
    dashboard_redis: Redis,
    users: dict[str, Any],
    document: dict[str, Any],
    monkeypatch: pytest.MonkeyPatch,
    settings: Any,
) -> None:
    _seed(dashboard_redis)
    api = Api(Checked(document), users)
    api.all(READS)
    _dynamic_reads(api)
    _searches(api, dashboard_redis)
    api.all(JOB_ACTIONS)
    _error_group_actions(api, dashboard_redis)
    api.all(QUEUE_ACTIONS)
    api.all(CHANGES)
    _refusals(api)
    _troubles(api, dashboard_redis, settings, monkeypatch)
    assert api.check.seen == api.check.documented()
    assert {"job_not_in_state", "job_broken", "corrupt_key", "csrf_failed"} <= api.check.codes


def test_the_document_is_valid_openapi_3_1_and_needs_the_apis_login(
    document: dict[str, Any], users: dict[str, Any]
) -> None:
    OpenAPIV31SpecValidator(document).validate()
    assert document["openapi"].startswith("3.1.")
    for who, status in ((None, 401), (users["nonstaff"], 403)):
        refused = _client(who).get(url("schema"))
        assert refused.status_code == status
        assert refused["Content-Type"] == "application/json"


def test_a_post_made_as_the_security_schemes_say_passes_the_login_and_csrf_checks(
    dashboard_redis: Redis, document: dict[str, Any], users: dict[str, Any]
) -> None:
    _seed(dashboard_redis)
    schemes = document["components"]["securitySchemes"]
    client = Client(enforce_csrf_checks=True)
    client.force_login(users["actor"])
    assert set(client.cookies) == {schemes["session"]["name"]}
    client.cookies[schemes["csrfCookie"]["name"]] = CSRF_TOKEN
    answer = client.post(
        url("queue_actions"),
        json.dumps({"action": "pause"}),
        content_type="application/json",
        headers={schemes["csrfHeader"]["name"]: CSRF_TOKEN},
    )
    assert answer.status_code == 200, answer.content


def _component(document: dict[str, Any], response: str) -> Draft202012Validator:
    """A validator of the JSON body of ``components.responses[response]``."""
    registry = Registry().with_resource(
        "urn:api", Resource.from_contents(document, default_specification=DRAFT202012)
    )
    pointer = f"urn:api#/components/responses/{response}/content/application~1json/schema"
    return Draft202012Validator({"$ref": pointer}, registry=registry)


SAMPLE_PARAMETERS = {
    "prefix": "bull",
    "name": "emails",
    "job_id": "f1",
    "connection": "default",
    "cohort_id": NO_COHORT,
    "group": "0" * 16,
}


def test_every_api_url_has_an_operation_for_exactly_the_methods_its_view_takes(
    dashboard_redis: Redis, document: dict[str, Any], users: dict[str, Any]
) -> None:
    _seed(dashboard_redis)
    namespace = API
    resolver = get_resolver()
    for part in namespace.split(":"):
        resolver = resolver.namespace_dict[part][1]
    root = document["servers"][0]["url"]
    method_not_allowed = _component(document, "MethodNotAllowed")
    viewer = _client(users["viewer"])
    routes = set()
    for pattern in resolver.url_patterns:
        assert isinstance(pattern, URLPattern), "nested URL includes are not documented"
        assert pattern.name, f"{pattern} has no name"
        parameters = list(pattern.pattern.converters)  # type: ignore[attr-defined]
        # Reversed with "{name}" for each parameter: the path as OpenAPI writes it.
        template = unquote(
            reverse(f"{namespace}:{pattern.name}", kwargs={p: f"{{{p}}}" for p in parameters})
        )
        assert template.startswith(root + "/")
        route = template.removeprefix(root)
        if route.startswith("/c/{connection}/"):
            # A queue URL on another Redis connection: the same path at its second server.
            route = route.removeprefix("/c/{connection}")
            servers = [s["url"] for s in document["paths"][route]["servers"]]
            assert servers == [root, root.rstrip("/") + "/c/{connection}"], route
        routes.add(route)
        assert route in document["paths"], f"{route} ({pattern.name}) is not documented"
        target = reverse(
            f"{namespace}:{pattern.name}", kwargs={p: SAMPLE_PARAMETERS[p] for p in parameters}
        )
        # OPTIONS is no method of the API: the answer names the methods the view takes.
        refused = viewer.options(target)
        assert refused.status_code == 405
        assert refused["Content-Type"] == "application/json"
        method_not_allowed.validate(refused.json())
        allowed = {method.strip().lower() for method in refused["Allow"].split(",")}
        assert allowed == set(document["paths"][route]) - {"servers"}, route
    assert routes == set(document["paths"])


@pytest.mark.parametrize("path_", ["nope/", "queues/bull/emails/nope/", "queues/bull/"])
def test_an_unknown_path_under_the_api_answers_the_documented_not_found(
    dashboard_redis: Redis, document: dict[str, Any], users: dict[str, Any], path_: str
) -> None:
    answer = _client(users["viewer"]).get(document["servers"][0]["url"] + "/" + path_)
    assert answer.status_code == 404
    assert answer["Content-Type"] == "application/json"
    _component(document, "NotFound").validate(answer.json())


def _tampered(response: Any, change: Callable[[Any], None]) -> Any:
    body = response.json()
    change(body)
    response.content = json.dumps(body).encode()
    return response


TAMPERINGS: dict[str, Callable[[Any], Any]] = {
    "a field the document lacks": lambda r: _tampered(
        r, lambda body: body["jobs"][0].update(surprise=1)
    ),
    "a field missing": lambda r: _tampered(r, lambda body: body["jobs"][0].pop("due")),
    "a field of another type": lambda r: _tampered(
        r, lambda body: body["jobs"][0].update(attempts="3")
    ),
    "a state that does not exist": lambda r: _tampered(r, lambda body: body.update(state="lost")),
    "a status the operation does not answer": lambda r: setattr(r, "status_code", 418) or r,
    "HTML instead of JSON": lambda r: r.__setitem__("Content-Type", "text/html") or r,
    "an error code the status does not have": lambda r: (
        setattr(r, "status_code", 401)
        or _tampered(
            r, lambda body: body.clear() or body.update(error={"code": "x", "message": "m"})
        )
    ),
}


@pytest.mark.parametrize("tampering", TAMPERINGS)
def test_an_answer_the_document_does_not_describe_fails_validation(
    dashboard_redis: Redis, document: dict[str, Any], users: dict[str, Any], tampering: str
) -> None:
    _seed(dashboard_redis)
    check = Checked(document)
    response = _client(users["viewer"]).get(url("jobs"), {"state": "failed"})
    check(response, 200)  # the real answer passes
    with pytest.raises(OpenAPIError):
        check(TAMPERINGS[tampering](response), response.status_code)


@pytest.mark.parametrize("change", [{"problem": None}, {"problem": "x", "action": "retry"}])
def test_a_cohort_half_readable_fails_validation(
    dashboard_redis: Redis, document: dict[str, Any], users: dict[str, Any], change: Any
) -> None:
    """A cohort is readable (every field, no problem) or not (id, at_ms, problem only)."""
    _seed(dashboard_redis)
    check = Checked(document)
    response = _client(users["viewer"]).get(url("cohorts"))
    unreadable = check(response, 200)["cohorts"][1]
    assert set(unreadable) == {"id", "at_ms", "problem"}
    with pytest.raises(OpenAPIError):
        check(_tampered(response, lambda body: body["cohorts"][1].update(change)), 200)


# Mounted under a prefix of a host project's choosing (this module is the URLconf).
urlpatterns = [path("ops/queues/", include("dashboard.urls"))]


def test_the_document_follows_the_mount_point(
    dashboard_redis: Redis, users: dict[str, Any], settings: Any
) -> None:
    settings.ROOT_URLCONF = __name__
    _seed(dashboard_redis)
    viewer = _client(users["viewer"])
    schema_url = url("schema")
    assert schema_url == "/ops/queues/api/schema/"
    document = viewer.get(schema_url).json()
    assert document["servers"] == [{"url": "/ops/queues/api"}]
    check = Checked(document)
    check(viewer.get(url("queue", ODD)), 200)
    check(viewer.get(url("job", ODD, job_id="batch/7")), 200)
    assert check.seen == {
        ("/queues/{prefix}/{name}/", "get", "200"),
        ("/queues/{prefix}/{name}/job/{job_id}", "get", "200"),
    }


FUZZ_EXAMPLES = 15  # per operation and kind of path: the run stays well under 30 s


def test_a_seeded_fuzz_finds_no_answer_outside_the_document(
    dashboard_redis: Redis, document: dict[str, Any], users: dict[str, Any]
) -> None:
    """Schemathesis makes requests the document allows (random bodies, queries,
    ids; real and unknown queues), sent as the actor with the session and CSRF
    token through Django's WSGI handler; every answer must be documented."""
    _seed(dashboard_redis)
    app = get_wsgi_application()
    actor = _client(users["actor"])
    cookies = {name: morsel.value for name, morsel in actor.cookies.items()}
    headers = {document["components"]["securitySchemes"]["csrfHeader"]["name"]: CSRF_TOKEN}
    checks = [
        not_a_server_error,
        status_code_conformance,
        content_type_conformance,
        response_headers_conformance,
        response_schema_conformance,
    ]
    fuzzed = schemathesis.openapi.from_dict(document)
    operations = [result.ok() for result in fuzzed.get_all_operations()]
    assert len(operations) == len(OPERATIONS)
    for operation in operations:
        has_queue = any(p.name == "prefix" for p in operation.path_parameters)
        known = {"prefix": EMAILS.prefix, "name": EMAILS.name} if has_queue else None
        cases = st.one_of(
            operation.as_strategy(path_parameters=known, cookies=cookies),
            operation.as_strategy(cookies=cookies),
        )

        @hypothesis_settings(
            max_examples=FUZZ_EXAMPLES,
            derandomize=True,
            database=None,
            deadline=None,
            suppress_health_check=list(HealthCheck),
        )
        @given(case=cases)
        def answer_is_documented(case: Any) -> None:
            response = case.call(app=app, headers=headers, cookies=cookies)
            case.validate_response(response, checks=checks, headers=headers)

        answer_is_documented()


def test_a_queue_on_another_redis_connection_is_answered_as_the_document_says(
    staging_redis: Redis, document: dict[str, Any], users: dict[str, Any]
) -> None:
    """The queue paths at their second server (``c/{connection}/``), on a real
    second Redis: same operations, same answers."""
    _seed(staging_redis)
    api = Api(Checked(document), users)
    queue = api(Ask(V, "queue", 200, connection="staging"))
    assert queue["connection"] == "staging"
    api(Ask(V, "jobs", 200, {"state": "wait"}, connection="staging"))
    api(Ask(V, "job", 200, job_id="w1", connection="staging"))
    retry = {"action": "retry", "ids": ["w1"], "state": "failed"}
    api(Ask(A, "job_actions", 409, retry, connection="staging"))
    listed = api(Ask(V, "queues", 200))
    assert [c["name"] for c in listed["connections"]] == ["default", "staging"]
    api(Ask(V, "queue", 404, connection="nope"))


def test_every_schema_is_generated_and_every_body_is_read_as_the_document_says(
    dashboard_redis: Redis, document: dict[str, Any], make_user: Callable[..., Any]
) -> None:
    """No schema is written by hand: the components are the declared Structs as
    msgspec describes them. And each POST's body is read by the Struct its
    operation names: the documented example passes the document, a field of
    the wrong type fails the document and is refused (400) with that field named."""
    shapes = (*answers.SHAPES, *dashboard_answers.SHAPES, *bodies.BODIES, OpenAPIDocument)
    _, declared = msgspec.json.schema_components(shapes, ref_template="#/components/schemas/{name}")
    assert document["components"]["schemas"] == json.loads(json.dumps(declared))
    _seed(dashboard_redis)
    superuser = _client(make_user("superuser"))
    registry = Registry().with_resource(
        "urn:api", Resource.from_contents(document, default_specification=DRAFT202012)
    )
    by_id = {declared.id: name for name, declared in OPERATIONS.items()}
    posts = [item["post"] for item in document["paths"].values() if "post" in item]
    assert len(posts) == len(bodies.BODIES)
    refused = 0
    for operation in posts:
        content = operation["requestBody"]["content"]["application/json"]
        schema = {**content["schema"], "$ref": "urn:api" + content["schema"]["$ref"]}
        validator = Draft202012Validator(schema, registry=registry)
        body = content["example"]
        validator.validate(body)
        target = url(by_id[operation["operationId"]])
        for field_ in body:
            wrong = {**body, field_: [{"not": "this"}]}
            if validator.is_valid(wrong):
                continue  # data: any JSON value
            answer = superuser.post(target, json.dumps(wrong), content_type="application/json")
            assert answer.status_code == 400, (target, field_, answer.content)
            message = answer.json()["error"]["message"]
            assert field_ in message or "ids" in message, (target, message)
            refused += 1
    assert refused >= 2 * len(posts)
