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
from collections.abc import Callable
from dataclasses import dataclass, field
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


def _post(client: Client, name: str, body: dict[str, Any], *, form: bool = False, **kw: Any) -> Any:
    target = url(name, **kw)
    if form:
        form_body = urlencode(body, doseq=True)
        return client.post(target, form_body, content_type="application/x-www-form-urlencoded")
    return client.post(target, json.dumps(body), content_type="application/json")


def _reads(check: Checked, viewer: Client) -> None:
    check(viewer.get(url("queues")), 200)
    check(viewer.get(url("schema")), 200)
    check(viewer.get(url("queue")), 200)
    assert check(viewer.get(url("queue", ODD)), 200)["name"] == ODD.name
    assert check(viewer.get(url("job", ODD, job_id="batch/7")), 200)["id"] == "batch/7"
    for state in STATES:
        page = check(viewer.get(url("jobs"), {"state": state}), 200)
        assert page["jobs"], f"nothing seeded in {state}: its rows would go unchecked"
    check(viewer.get(url("jobs"), {"state": "failed", "start": 1, "end": 2}), 200)
    check(viewer.get(url("jobs"), {"state": "bogus"}), 400, valid_request=False)
    check(viewer.get(url("jobs"), {"start": 5, "end": 1}), 400)
    for job_id in ("w1", "raw", "big", "p1", "d1", "a1", "parent", "child1", "f1", "broken"):
        detail = viewer.get(url("job", job_id=job_id))
        if job_id == "broken":  # not a hash: no job to show
            check(detail, 404)
            continue
        body = check(detail, 200)
        assert body["id"] == job_id
    assert check(viewer.get(url("job", job_id="big"), {"full": "1"}), 200)["data"] is not None
    check(viewer.get(url("job", job_id="f1"), {"logs_start": 1, "logs_size": 1}), 200)
    check(viewer.get(url("job", job_id="gone")), 404)
    check(viewer.get(url("job", job_id="a:b")), 404, valid_request=False)
    page = check(viewer.get(url("events"), {"count": 1}), 200)
    check(viewer.get(url("events"), {"before": page["next_before"], "type": "failed"}), 200)
    check(viewer.get(url("events"), {"job": "w1"}), 200)
    check(viewer.get(url("events"), {"before": "yesterday"}), 400, valid_request=False)
    check(viewer.get(url("workers")), 200)
    check(viewer.get(url("limits")), 200)
    _cohort_reads(check, viewer)


def _cohort_reads(check: Checked, viewer: Client) -> None:
    listed = check(viewer.get(url("cohorts"), {"count": 3}), 200)["cohorts"]
    assert [bool(cohort["problem"]) for cohort in listed] == [False, True]
    recorded = listed[0]["id"]
    one = check(viewer.get(url("cohort", cohort_id=recorded), {"part": "failed"}), 200)
    assert one["total"] == 2
    assert one["cohort"]["breakdown"]["failed_same"] == 2
    check(viewer.get(url("cohort", cohort_id=recorded), {"part": "wait", "count": 1}), 200)
    check(viewer.get(url("cohort", cohort_id=recorded), {"part": "bogus"}), 400)
    check(viewer.get(url("cohort", cohort_id=listed[1]["id"])), 404)
    check(viewer.get(url("cohort", cohort_id=NO_COHORT)), 404)
    _error_group_reads(check, viewer)


def _error_group_reads(check: Checked, viewer: Client) -> None:
    grouped = check(viewer.get(url("error_groups")), 200)
    assert grouped["complete"]
    assert grouped["indexed"] == grouped["failed"] == 5
    key = grouped["groups"][0]["key"]
    page = check(viewer.get(url("error_group_jobs", group=key), {"start": 1, "size": 2}), 200)
    assert len(page["jobs"]) == 2
    check(viewer.get(url("error_group_jobs", group="0" * 16)), 200)
    check(viewer.get(url("error_group_jobs", group="nope")), 404, valid_request=False)
    crooked = check(viewer.get(url("error_groups", CROOKED)), 409)
    assert crooked["error"]["code"] == "corrupt_key"


def _flow_reads(check: Checked, viewer: Client) -> None:
    tree = check(viewer.get(url("flow", job_id="child1")), 200)["flow"]
    assert [step["id"] for step in tree["path"]] == ["parent", "child1"]
    assert check(viewer.get(url("flow", job_id="w1")), 200) == {"flow": None}
    check(viewer.get(url("flow", job_id="gone")), 404)
    page = check(viewer.get(url("flow_children", job_id="parent")), 200)
    assert {child["id"] for child in page["children"]} == {"child0", "child1"}
    check(viewer.get(url("flow_children", job_id="parent"), {"page": "3.0.0"}), 200)
    check(
        viewer.get(url("flow_children", job_id="parent"), {"page": "x"}), 400, valid_request=False
    )
    check(viewer.get(url("flow_children", job_id="gone")), 404)
    listed = check(viewer.get(url("schedulers")), 200)
    assert {row["kind"] for row in listed["schedulers"]} == {"scheduler", "legacy"}
    assert any(row["notes"] for row in listed["schedulers"])
    check(viewer.get(url("schedulers"), {"start": 1, "end": 2}), 200)
    check(viewer.get(url("schedulers"), {"start": 5, "end": 1}), 400)


def _job_actions(check: Checked, actor: Client) -> None:
    retried = check(_post(actor, "job_actions", {"action": "retry", "ids": ["f1"]}), 200)
    assert retried["count"] == 1
    again = check(_post(actor, "job_actions", {"action": "retry", "id": "f1"}), 409)
    assert again["error"]["code"] == "job_not_in_state"
    some = check(_post(actor, "job_actions", {"action": "retry", "ids": ["f2", "gone"]}), 200)
    assert [r["ok"] for r in some["results"]] == [True, False]
    gone = check(_post(actor, "job_actions", {"action": "remove", "ids": ["gone"]}), 404)
    assert gone["error"]["code"] == "job_not_exist"
    broken = check(_post(actor, "job_actions", {"action": "retry", "ids": ["broken"]}), 409)
    assert broken["error"]["code"] == "job_broken"
    check(_post(actor, "job_actions", {"action": "promote", "ids": ["d1"]}, form=True), 200)
    form = {"action": "fail", "ids": ["w1", "p1"], "reason": "stop"}
    check(_post(actor, "job_actions", form, form=True), 200)
    body = {"action": "retry", "ids": ["child1"], "state": "completed"}
    check(_post(actor, "job_actions", body), 200)
    check(
        _post(actor, "job_actions", {"action": "explode", "ids": ["f3"]}), 400, valid_request=False
    )
    check(_post(actor, "job_actions", {"action": "retry", "ids": []}), 400, valid_request=False)
    jammed = check(_post(actor, "job_actions", {"action": "retry", "ids": ["1"]}, ref=JAMMED), 409)
    assert jammed["error"]["code"] == "corrupt_key"


def _error_group_actions(check: Checked, actor: Client) -> None:
    """After the job actions: f3 and f4 are still failed ("boom"), with "broken" beside them."""
    groups = check(actor.get(url("error_groups")), 200)["groups"]
    (group,) = [g for g in groups if g["text"] == "boom"]
    body = {"action": "retry", "group": group["key"]}
    done = check(_post(actor, "error_group_actions", body), 200)
    assert (done["count"], done["moved_meanwhile"], done["left"]) == (2, 0, 0)
    check(_post(actor, "error_group_actions", body), 400)  # nothing left in it
    check(_post(actor, "error_group_actions", {"action": "x", **body}), 400, valid_request=False)
    check(_post(actor, "error_group_actions", {"action": "retry"}), 400, valid_request=False)
    jammed_key = check(actor.get(url("error_groups", JAMMED)), 200)["groups"][0]["key"]
    jammed = {"action": "retry", "group": jammed_key}
    refused = check(_post(actor, "error_group_actions", jammed, ref=JAMMED), 409)
    assert refused["error"]["code"] == "corrupt_key"


def _queue_actions(check: Checked, actor: Client) -> None:
    done = check(_post(actor, "queue_actions", {"action": "retry_all", "state": "failed"}), 200)
    assert [job["id"] for job in done["skipped"]] == ["broken"]
    check(_post(actor, "queue_actions", {"action": "promote_all"}, form=True), 200)
    clean = {"action": "clean", "state": "completed", "grace_ms": "0"}
    check(_post(actor, "queue_actions", clean, form=True), 200)
    check(_post(actor, "queue_actions", {"action": "clean", "grace_ms": 0}), 200)
    check(_post(actor, "queue_actions", {"action": "pause"}), 200)
    check(_post(actor, "queue_actions", {"action": "resume"}), 200)
    check(_post(actor, "queue_actions", {"action": "clean"}), 400, valid_request=False)
    jammed = check(_post(actor, "queue_actions", {"action": "retry_all"}, ref=JAMMED), 409)
    assert jammed["error"]["code"] == "corrupt_key"


def _limit_actions(check: Checked, actor: Client) -> None:
    assert check(_post(actor, "global_concurrency", {"concurrency": 3}), 200)["count"] == 0
    check(_post(actor, "global_concurrency", {"concurrency": "none"}, form=True), 200)
    check(_post(actor, "global_concurrency", {"concurrency": None}), 200)
    check(_post(actor, "global_concurrency", {"concurrency": 0}), 400, valid_request=False)
    check(_post(actor, "global_concurrency", {}), 400, valid_request=False)
    jammed = check(_post(actor, "global_concurrency", {"concurrency": 2}, ref=JAMMED), 409)
    assert jammed["error"]["code"] == "corrupt_key"


def _scheduler_actions(check: Checked, actor: Client) -> None:
    ran = check(_post(actor, "scheduler_actions", {"action": "run_now", "id": "beat"}), 200)
    assert ran["count"] == 1
    check(_post(actor, "scheduler_actions", {"action": "remove", "id": "nightly"}, form=True), 200)
    gone = check(_post(actor, "scheduler_actions", {"action": "remove", "id": "nightly"}), 404)
    assert gone["error"]["code"] == "scheduler_not_exist"
    broken = check(_post(actor, "scheduler_actions", {"action": "run_now", "id": "bad"}), 409)
    assert broken["error"]["code"] == "scheduler_broken"
    jammed = {"action": "run_now", "id": "beat"}
    assert check(_post(actor, "scheduler_actions", jammed, ref=JAMMED), 409)["error"]["code"] == (
        "corrupt_key"
    )
    check(
        _post(actor, "scheduler_actions", {"action": "explode", "id": "beat"}),
        400,
        valid_request=False,
    )


def _changes(check: Checked, users: dict[str, Any]) -> None:
    """Edit data, duplicate, add (dashboard.change_jobs): each answer they give."""
    editor = _client(users["editor"])
    edited = check(_post(editor, "edit_job_data", {"id": "f4", "data": {"to": "b"}}), 200)
    assert edited["action"] == "edit_data"
    check(_post(editor, "edit_job_data", {"id": "f4", "data": '{"to": "c"}'}, form=True), 200)
    copy = check(_post(editor, "duplicate_job", {"id": "w1"}), 201)
    assert copy["source"] == "w1"
    check(_post(editor, "duplicate_job", {"id": "w1"}, form=True), 201)
    body = {"name": "send", "data": {"n": 1}, "opts": {"delay": 10, "attempts": 2}}
    check(_post(editor, "add_job", body), 201)
    check(_post(editor, "add_job", {"name": "send", "opts": '{"priority": 3}'}, form=True), 201)
    for name, bad in (
        ("edit_job_data", {"id": "f4", "data": "{nope"}),
        ("duplicate_job", {"id": "a:b"}),
        ("add_job", {"name": "send", "data": "{nope"}),
    ):
        check(_post(editor, name, bad, form=True), 400, valid_request=False)
    check(
        _post(editor, "add_job", {"name": "send", "opts": {"parent": {}}}), 400, valid_request=False
    )
    gone = check(_post(editor, "edit_job_data", {"id": "gone", "data": {}}), 404)
    assert gone["error"]["code"] == "job_not_exist"
    check(_post(editor, "duplicate_job", {"id": "gone"}), 404)
    active = check(_post(editor, "edit_job_data", {"id": "a1", "data": {}}), 409)
    assert active["error"]["code"] == "job_not_in_state"
    broken = check(_post(editor, "duplicate_job", {"id": "broken"}), 409)
    assert broken["error"]["code"] == "job_broken"
    jammed = check(_post(editor, "add_job", {"name": "send"}, ref=JAMMED), 409)
    assert jammed["error"]["code"] == "corrupt_key"


# The group of "broken" (its key is no hash: no reason), the one failed job left by then.
_FULL_GROUP = {"action": "retry", "group": group_key(NO_REASON)}
# One POST of each operation, as the actor sends it (the changes: as the editor), for
# what every operation answers alike: not logged in, forbidden, too large, Redis full
# or gone, a bug.
_ACTS = [
    ("job_actions", {"action": "retry", "ids": ["f3"]}),
    ("queue_actions", {"action": "retry_all"}),
    ("global_concurrency", {"concurrency": 2}),
    ("scheduler_actions", {"action": "run_now", "id": "beat"}),
    ("search_act", {"action": "retry", "state": "failed", "ids": ["f3"]}),
    ("error_group_actions", _FULL_GROUP),
]
_CHANGE_POSTS = [
    ("edit_job_data", {"id": "f4", "data": {"to": "d"}}),
    ("duplicate_job", {"id": "w1"}),
    ("add_job", {"name": "send"}),
]


def _gets(ref: QueueRef = EMAILS) -> list[str]:
    """One GET of each operation of a queue, then the two without one (every
    one but the schema's needs Redis)."""
    queue = ["queue", "jobs", "events", "schedulers", "workers", "limits", "cohorts", "search"]
    reads = [url(name, ref) for name in (*queue, "error_groups")]
    reads += [url(name, ref, job_id="f3") for name in ("job", "flow", "flow_children")]
    reads.append(url("cohort", ref, cohort_id=NO_COHORT))
    reads.append(url("error_group_jobs", ref, group="0" * 16))
    return [*reads, url("queues"), url("schema")]


def _posting(users: dict[str, Any], **kw: Any) -> list[tuple[Client, str, dict[str, Any]]]:
    actor, editor = _client(users["actor"], **kw), _client(users["editor"], **kw)
    return [(actor, *post) for post in _ACTS] + [(editor, *post) for post in _CHANGE_POSTS]


def _troubles(
    check: Checked, users: dict[str, Any], client: Redis, settings: Any, monkeypatch: Any
) -> None:
    """Bodies over the limits, Redis full, a view crashing, Redis gone: every operation."""
    posts = _posting(users)
    limit = settings.DATA_UPLOAD_MAX_MEMORY_SIZE
    settings.DATA_UPLOAD_MAX_MEMORY_SIZE = 1_000
    for poster, name, body in posts:
        check(_post(poster, name, {**body, "padding": "x" * 2_000}), 413, valid_request=False)
    settings.DATA_UPLOAD_MAX_MEMORY_SIZE = limit
    settings.ECHOMQ_MAX_JOB_DATA_BYTES = 100
    editor = _client(users["editor"])
    big = check(_post(editor, "edit_job_data", {"id": "f4", "data": "x" * 200}), 413)
    assert big["error"]["code"] == "data_too_large"
    check(_post(editor, "duplicate_job", {"id": "big"}), 413)
    check(_post(editor, "add_job", {"name": "send", "data": "x" * 200}), 413)
    del settings.ECHOMQ_MAX_JOB_DATA_BYTES
    with redis_full(client):
        for poster, name, body in posts:
            full = check(_post(poster, name, body), 507)
            assert full["error"]["code"] == "redis_out_of_memory"
    viewer = _client(users["viewer"])

    def crash(*args: Any) -> bool:
        raise RuntimeError("a bug")

    with monkeypatch.context() as patched:
        patched.setattr(permissions, "can_view", crash)
        for target in _gets():
            check(viewer.get(target), 500)
        for poster, name, body in posts:
            check(_post(poster, name, body), 500)
    settings.REDIS_URL = f"redis://127.0.0.1:{free_port()}/0"
    discovery.clear_discovery_cache()
    for target in _gets()[:-1]:
        check(viewer.get(target), 503)
    for poster, name, body in posts:
        check(_post(poster, name, body), 503)


def _refusals(check: Checked, users: dict[str, Any]) -> None:
    """Who may not, requests refused before any view ran, and unknown queues."""
    nope = QueueRef("bull", "nope")
    for target in _gets(nope)[:-2]:
        check(_client(users["viewer"]).get(target), 404)
    for poster, name, body in _posting(users):
        check(_post(poster, name, body, ref=nope), 404)
    for who, status in ((None, 401), (users["nonstaff"], 403)):
        client = _client(who)
        logged_in = who is not None  # without the session cookie the request breaks the rules
        for target in _gets():
            check(client.get(target), status, valid_request=logged_in)
        for name, body in (*_ACTS, *_CHANGE_POSTS):
            check(_post(client, name, body), status, valid_request=logged_in)
    viewer = _client(users["viewer"])
    for name, body in (*_ACTS, *_CHANGE_POSTS):
        assert check(_post(viewer, name, body), 403)["error"]["code"] == "forbidden"
    for poster, name, body in _posting(users, csrf=False):
        refused = check(_post(poster, name, body), 403, valid_request=False)
        assert refused["error"]["code"] == "csrf_failed"


def _searches(
    check: Checked, viewer: Client, actor: Client, users: dict[str, Any], client: Redis
) -> None:
    """A search to its end, each way one is refused, and acting on its matches
    (jobs of its own: the steps after it use the seeded ones)."""
    for job_id in ("s1", "s2", "s3"):
        seed_job(client, EMAILS.keys, job_id, state="failed")
    client.zadd(EMAILS.keys.failed, {"s4": now_ms()})
    client.set(EMAILS.keys.job("s4"), "not a hash")
    first = check(viewer.get(url("search"), {"state": "failed", "q": "name ~ a", "rows": "1"}), 200)
    step = first
    while not step["done"]:
        more = {"state": "failed", "q": "name ~ a", "search": step["search"]}
        step = check(viewer.get(url("search"), {**more, "cursor": step["cursor"]}), 200)
    for bad in ({"q": "x" * 1_000}, {"q": "name ~ a", "cursor": "forged"}):
        assert check(viewer.get(url("search"), bad), 400)["error"]["code"] == "bad_query"
    check(
        viewer.get(url("search"), {"state": "nowhere", "q": "name ~ a"}), 400, valid_request=False
    )
    user = permissions.user_label(users["viewer"])
    search_id = search.SEARCHES.start(user)
    (current,) = (s for s in search.SEARCHES._by_user[user] if s.search_id == search_id)
    with current.stepping:  # a step of this search still running
        going_on = {"q": "name ~ a", "search": search_id, "cursor": "0||0|10|"}
        check(viewer.get(url("search"), going_on), 429)
    stale = {"q": "name ~ a", "search": "old", "cursor": "0||0|10|"}
    assert check(viewer.get(url("search"), stale), 409)["error"]["code"] == "search_replaced"
    jammed = {"state": "wait", "q": "name ~ a"}
    assert check(viewer.get(url("search", JAMMED), jammed), 409)["error"]["code"] == "corrupt_key"
    client.zrem(EMAILS.keys.failed, "s3")  # it moved meanwhile
    body = {"action": "remove", "state": "failed", "ids": ["s1", "s2", "s3", "s4"]}
    done = check(_post(actor, "search_act", body), 200)
    assert (done["count"], done["moved_meanwhile"], len(done["skipped"])) == (2, 1, 1)
    jammed_body = json.dumps({"action": "retry", "state": "failed", "ids": ["1"]})
    jammed_url = url("search_act", JAMMED)
    check(actor.post(jammed_url, jammed_body, content_type="application/json"), 409)
    check(_post(actor, "search_act", {"action": "fail", "ids": ["1"]}), 400, valid_request=False)
    client.delete(EMAILS.keys.job("s4"))  # the broken one: later steps count the seeded ones
    client.zrem(EMAILS.keys.failed, "s4")


def test_every_documented_answer_is_given_and_matches_the_document(
    dashboard_redis: Redis,
    users: dict[str, Any],
    document: dict[str, Any],
    monkeypatch: pytest.MonkeyPatch,
    settings: Any,
) -> None:
    _seed(dashboard_redis)
    check = Checked(document)
    viewer, actor = _client(users["viewer"]), _client(users["actor"])
    _reads(check, viewer)
    _flow_reads(check, viewer)
    _searches(check, viewer, actor, users, dashboard_redis)
    _job_actions(check, actor)
    _error_group_actions(check, actor)
    _queue_actions(check, actor)
    _limit_actions(check, actor)
    _scheduler_actions(check, actor)
    _changes(check, users)
    _refusals(check, users)
    _troubles(check, users, dashboard_redis, settings, monkeypatch)
    assert check.seen == check.documented()
    assert {"job_not_in_state", "job_broken", "corrupt_key", "csrf_failed"} <= check.codes


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
    check = Checked(document)
    viewer, actor = _client(users["viewer"]), _client(users["actor"])
    on_staging = {"connection": "staging", "prefix": EMAILS.prefix, "name": EMAILS.name}
    queue = check(viewer.get(reverse(f"{API}:queue", kwargs=on_staging)), 200)
    assert queue["connection"] == "staging"
    check(viewer.get(reverse(f"{API}:jobs", kwargs=on_staging) + "?state=wait"), 200)
    check(viewer.get(reverse(f"{API}:job", kwargs={**on_staging, "job_id": "w1"})), 200)
    retry = {"action": "retry", "ids": ["w1"], "state": "failed"}
    check(_post(actor, "job_actions", retry, connection="staging"), 409)
    listed = check(viewer.get(url("queues")), 200)
    assert [c["name"] for c in listed["connections"]] == ["default", "staging"]
    unknown = {**on_staging, "connection": "nope"}
    check(viewer.get(reverse(f"{API}:queue", kwargs=unknown)), 404)


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
