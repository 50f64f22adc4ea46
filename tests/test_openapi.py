"""The served OpenAPI document is valid OpenAPI 3.1 and holds for every real
answer of the API.

CASES asks every operation, through Django's test client against a real Redis
seeded as a shop's queues are, for each answer the document declares: its
successes, bad input, each kind of user, unknown queues and jobs, broken keys,
bodies over the limits, Redis full or gone, a view crashing. Each case is a
test of its own on a fresh seed; openapi-core checks the request and the answer
(status, content type, headers, body) against the document, whose objects are
closed: a field, a status or a content type it lacks fails. The table must ask
for every status of every operation the document declares.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from contextlib import contextmanager, nullcontext
from dataclasses import KW_ONLY, dataclass, replace
from functools import cache
from typing import Any
from urllib.parse import parse_qsl, urlencode

import msgspec
import pytest
import schemathesis
from django.core.exceptions import RequestDataTooBig
from django.core.wsgi import get_wsgi_application
from django.test import Client
from django.test.client import ClientHandler
from django.urls import include, path, resolve, reverse
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
from schemathesis.specs.openapi import checks

from dashboard.acting.cohort_record import record_cohort
from dashboard.core import answers as dashboard_answers
from dashboard.core import permissions
from dashboard.openapi import OpenAPIDocument, operation_of
from dashboard.search import views as search
from dashboard.shared import bodies
from dashboard.urls import api_patterns
from queues import discovery
from queues.read import answers
from queues.read.error_folding import fold, group_key
from queues.read.error_groups import error_groups
from queues.read.job import DATA_DISPLAY_LIMIT
from queues.read.refs import QueueRef
from queues.read.states import STATES
from queues.schedulers import JobSchedulers, Repeat
from tests.dashboard_seed import now_ms, seed_events, seed_job, seed_metrics
from tests.e2e.server import free_port
from tests.test_out_of_memory import redis_full

ORDERS, JAMMED, CROOKED = (QueueRef("bull", name) for name in ("orders", "jammed", "crooked"))
ODD = QueueRef("bull", "billing/eu~2")  # both characters a URL segment escapes: ~s, ~~
WAITING, UNREADABLE, LARGE = "ord_8f3k2Lq9", "ord_2mX7Hc4r", "exp_5Vb0Ra3k"
PRIORITIZED, DELAYED, ACTIVE = "ord_5Tq1Wb8n", "rem_9aK2Lp0x", "ord_7Yh3Ns6d"
PARENT, CHILD, DONE_CHILD = "inv_4Hb8Qe2w", "pdf_1Lm4Xs7c", "pdf_0Kz2Wq5e"
COMPLETED, ODD_JOB = "ord_3Pd9Gt1y", "invoice/2025-11/0042"  # a '/' takes the rest of the path
DECLINED, REFUSED = "Your card was declined.", "connect ECONNREFUSED 10.0.3.7:5432"
FAILED = {"pay_6Rf2Hj8m": DECLINED, "pay_1Qa7Zc3v": DECLINED, "pay_8Nw5Ek0t": REFUSED}
FAILED_1, FAILED_2, FAILED_3 = FAILED
BROKEN = "pay_9Dk3Mv7b"  # failed, its key replaced by a string by another writer
GROUPED_BROKEN = "pay_2Wc5Lx0n"  # the same, once its group was indexed
NO_COHORT = "1733389200000-0000abcd"  # well-formed, never recorded
DECLINED_GROUP = group_key(fold(DECLINED))
Q = "queues/bull/orders/"  # a case's path starts here, unless it starts with "/"
ROOT = reverse("dashboard:api:schema").removesuffix("schema/")
OPERATIONS = {p.name: operation_of(p) for p in api_patterns}  # every API URL's
CSRF_TOKEN = "k" * 32  # a CSRF secret as Django's cookie holds it


def _seed(client: Redis) -> dict[str, str]:
    """Jobs in every state and shape the answers have branches for; returns
    the ids the seed could not choose (a cohort's, an event's)."""
    keys, now = ORDERS.keys, now_ms()
    seed_job(client, keys, WAITING, name="charge", data={"customer": "cus_NffrFeUfNV2Hib"})
    seed_job(client, keys, UNREADABLE, fields={"data": '{"amount": 49', "opts": "{not json"})
    seed_job(client, keys, LARGE, name="export", data={"csv": "x" * (DATA_DISPLAY_LIMIT + 9)})
    seed_job(client, keys, PRIORITIZED, state="prioritized", opts={"priority": 5})
    seed_job(client, keys, DELAYED, state="delayed", name="send-reminder")
    seed_job(client, keys, ACTIVE, state="active", fields={"progress": '{"step": 1, "of": 4}'})
    client.set(keys.lock(ACTIVE), "3f0c1e9a-5b7d-4c2e-9f1a-8d6b2e4c7a10", px=30_000)
    seed_job(client, keys, PARENT, state="waiting-children", name="invoice")
    client.sadd(keys.dependencies(PARENT), keys.job(CHILD))
    client.hset(keys.processed(PARENT), keys.job(DONE_CHILD), json.dumps("s3://inv/0042.pdf"))
    parent = {"id": PARENT, "queueKey": keys.base.rstrip(":")}
    child = {"parentKey": keys.job(PARENT), "parent": json.dumps(parent), "progress": "42"}
    seed_job(client, keys, CHILD, state="completed", fields={**child, "somethingElse": "kept"})
    seed_job(client, keys, COMPLETED, state="completed")
    for job_id, reason in (*FAILED.items(), ("pay_4Ub9Fo2s", REFUSED), (GROUPED_BROKEN, DECLINED)):
        seed_job(client, keys, job_id, state="failed", fields={"failedReason": reason})
    client.rpush(keys.logs(FAILED_1), "charging cus_NffrFeUfNV2Hib 49.99 EUR", "card_declined")
    error_groups(client, ORDERS)  # the failed jobs grouped, then one of them broken
    for job_id in (GROUPED_BROKEN, BROKEN):
        client.zadd(keys.failed, {job_id: now})
        client.set(keys.job(job_id), "not a hash")
    added = {"jobId": WAITING, "name": "charge"}
    failed = {"jobId": FAILED_1, "failedReason": DECLINED}
    events = seed_events(client, keys, [("added", added), ("failed", failed), ("drained", {})])
    seed_metrics(client, keys, [12, 9, 14], [0, 2, 1], now)
    schedulers = JobSchedulers(ORDERS.name, client)
    nightly = Repeat(pattern="0 3 * * *", tz="Europe/Berlin")
    schedulers.upsert("nightly-report", nightly, name="report", data={})
    schedulers.upsert("heartbeat", Repeat(every_ms=60_000, limit=5), name="ping", data={"n": 1})
    schedulers.upsert("digest", Repeat(every_ms=60_000), name="digest", data={"x": 1})
    client.hset(keys.repeat_scheduler("digest"), mapping={"data": "{oops", "every": "soon"})
    client.zadd(keys.repeat, {"sweep::::*/5 * * * *": now + 60_000})  # a legacy repeatable job
    seed_job(client, ODD.keys, ODD_JOB)
    seed_job(client, JAMMED.keys, FAILED_1, state="failed", fields={"failedReason": DECLINED})
    client.sadd(JAMMED.keys.wait, "not a list")  # moves into it are refused
    seed_job(client, CROOKED.keys, WAITING)
    client.set(CROOKED.keys.failed, "not a zset")  # no error groups to read
    retried = [FAILED_1, FAILED_2, WAITING]  # the first two fail again for the same reason
    reasons, at = dict.fromkeys(retried[:2], DECLINED), {"at_ms": now, "source": "failed"}
    cohort = record_cohort(
        client, ORDERS, "retry", retried, user="ana", **at, previous_reasons=reasons
    )
    broken = f"{now - 60_000:013d}-0000beef"
    client.set(keys.cohort(broken), b"not a record")
    client.zadd(keys.cohort_index(), {broken: now - 60_000})
    return {"cohort": str(cohort), "broken_cohort": broken, "event": events[1]}


V, A, E, N = "viewer", "actor", "editor", "nonstaff"  # who asks (None: nobody logged in)


@dataclass(frozen=True)
class Case:
    """``who`` sends ``method`` to ``path`` with ``body`` (JSON, or a form)
    and must get ``status``. ``path`` is below the queue bull:orders, or below
    the API root when it starts with "/"; ``{…}`` is an id the seed made."""

    who: str | None
    method: str
    path: str
    status: int
    body: dict[str, Any] | None = None
    _: KW_ONLY
    code: str = ""  # the error code the answer must carry
    then: Callable[[Any], object] | None = None  # holds for the answer
    more: Callable[[Any], dict[str, str]] | None = None  # the next page's query (until None)
    valid: bool = True  # a request the document accepts
    form: bool = False
    csrf: bool = True
    setup: str = ""  # what goes wrong around the request (_world, url)

    @property
    def url(self) -> str:
        queue = "queues/bull/nope/" if self.setup == "nope" else Q  # or an unknown queue
        return ROOT + (self.path[1:] if self.path[:1] == "/" else queue + self.path)

    def __str__(self) -> str:
        return f"{self.who} {self.method} {self.url} {self.status} {self.code}".strip()


def get(who: str | None, path: str, status: int, **more: Any) -> Case:
    return Case(who, "GET", path, status, **more)


def post(who: str | None, path: str, status: int, body: dict[str, Any], **more: Any) -> Case:
    return Case(who, "POST", path, status, body, **more)


def naming(field_: str) -> Callable[[Any], bool]:
    return lambda answer: (
        field_ in answer["error"]["message"] or "ids" in answer["error"]["message"]
    )


def every(cases: list[Case], **change: Any) -> list[Case]:
    return [replace(case, then=None, **change) for case in cases]  # a success's checks dropped


SEARCH, J = "search/?state=failed&q=name+~+task", "/queues/bull/jammed/"
SCHEDULERS = "schedulers/actions/"
RETRY = {"action": "retry", "ids": [FAILED_1]}
GROUP_RETRY = {"action": "retry", "group": DECLINED_GROUP}
# One request of each operation: the refusals and troubles every one answers alike are these.
GETS = [
    *(get(V, p, 200) for p in ("", "jobs/", "events/", "schedulers/", "workers/", "limits/")),
    *(get(V, p, 200) for p in ("cohorts/", SEARCH, "errors/", f"errors/{DECLINED_GROUP}/jobs/")),
    *(get(V, f"{p}/{WAITING}", 200) for p in ("job", "flow", "flow-children")),
    get(V, f"cohorts/{NO_COHORT}/", 404),
    get(V, "/queues/", 200),
    get(V, "/schema/", 200),  # the one that needs no Redis
]
POSTS = [
    post(A, "actions/", 200, RETRY, then=lambda a: a["count"] == 1),
    post(A, "bulk/", 200, {"action": "retry_all", "state": "failed"}),
    post(A, "concurrency/", 200, {"concurrency": 3}),
    post(A, SCHEDULERS, 200, {"action": "run_now", "id": "heartbeat"}),
    post(A, "search/act/", 200, {**RETRY, "state": "failed"}),
    post(A, "errors/actions/", 200, GROUP_RETRY),
    post(E, "edit/", 200, {"id": FAILED_3, "data": {"customer": "cus_Q1w2E3r4T5y6U7"}}),
    post(E, "duplicate/", 201, {"id": WAITING}, then=lambda a: a["source"] == WAITING),
    post(E, "add/", 201, {"name": "charge", "data": {"customer": "cus_Q1w2E3r4T5y6U7"}}),
]
# What an answer must say besides its shape: the case took the branch it is for.
THEN: dict[str, Callable[[Any], bool]] = {
    "gone": lambda a: [result["ok"] for result in a["results"]] == [True, False],
    "moved": lambda a: [a["count"], a["moved_meanwhile"], len(a["skipped"])] == [2, 1, 1],
    "one unreadable": lambda a: [bool(c["problem"]) for c in a["cohorts"]] == [False, True],
    "same reason": lambda a: [a["total"], a["cohort"]["breakdown"]["failed_same"]] == [2, 2],
    "grouped": lambda a: [a["complete"], [g["count"] for g in a["groups"]]] == [True, [3, 2, 1]],
    "both kinds": lambda a: (
        {(row["kind"], bool(row["notes"])) for row in a["schedulers"]}
        == {("scheduler", True), ("scheduler", False), ("legacy", False)}
    ),
    "skipped": lambda a: [job["id"] for job in a["skipped"]] == [GROUPED_BROKEN],
}
SHOWN = (UNREADABLE, LARGE, PRIORITIZED, DELAYED, ACTIVE, PARENT, CHILD, FAILED_1)
MATCHES = [FAILED_1, FAILED_3, COMPLETED, BROKEN]  # two move, one completed meanwhile, one broken
REMOVE_MATCHES = {"action": "remove", "state": "failed", "ids": MATCHES}
CASES = [
    *GETS,
    *POSTS,
    get(V, "/queues/bull/billing~seu~~2/", 200, then=lambda a: a["name"] == ODD.name),
    get(V, f"/queues/bull/billing~seu~~2/job/{ODD_JOB}", 200, then=lambda a: a["id"] == ODD_JOB),
    *(get(V, f"jobs/?state={state}", 200, then=lambda a: a["jobs"]) for state in STATES),
    get(V, "jobs/?state=failed&start=1&end=2", 200),
    get(V, "jobs/?state=bogus", 400, valid=False),
    get(V, "jobs/?start=5&end=1", 400),
    *(get(V, f"job/{job}", 200, then=lambda a, job=job: a["id"] == job) for job in SHOWN),
    get(V, f"job/{LARGE}?full=1", 200, then=lambda a: a["data"] is not None),
    get(V, f"job/{FAILED_1}?logs_start=1&logs_size=1", 200),
    get(V, f"job/{BROKEN}", 404),  # not a hash: no job to show
    get(V, "job/ord_gone", 404),
    get(V, "job/ord:8f3k", 404, valid=False),
    get(V, "events/?count=1", 200, more=lambda a: {"count": "1", "before": a["next_before"]}),
    get(V, f"events/?job={WAITING}&type=added&before={{event}}", 200),
    get(V, "events/?before=yesterday", 400, valid=False),
    get(V, "cohorts/?count=3", 200, then=THEN["one unreadable"]),
    get(V, "cohorts/{cohort}/?part=failed", 200, then=THEN["same reason"]),
    get(V, "cohorts/{cohort}/?part=wait&count=1", 200),
    get(V, "cohorts/{cohort}/?part=bogus", 400),
    get(V, "cohorts/{broken_cohort}/", 404),
    get(V, "errors/", 200, then=THEN["grouped"]),
    get(V, "/queues/bull/crooked/errors/", 409, code="corrupt_key"),
    get(V, f"errors/{DECLINED_GROUP}/jobs/?start=1&size=1", 200, then=lambda a: a["jobs"]),
    get(V, f"errors/{'0' * 16}/jobs/", 200),
    get(V, "errors/nope/jobs/", 404, valid=False),
    get(V, f"flow/{CHILD}", 200, then=lambda a: a["flow"]["path"][0]["id"] == PARENT),
    get(V, "flow/ord_gone", 404),
    get(V, f"flow-children/{PARENT}?page=3.0.0", 200),
    get(V, f"flow-children/{PARENT}", 200, then=lambda a: len(a["children"]) == 2),
    get(V, f"flow-children/{PARENT}?page=x", 400, valid=False),
    get(V, "flow-children/ord_gone", 404),
    get(V, "schedulers/", 200, then=THEN["both kinds"]),
    get(V, "schedulers/?start=1&end=2", 200),
    get(V, "schedulers/?start=5&end=1", 400),
    get(V, f"{SEARCH}&rows=1", 200, more=lambda a: {"search": a["search"], "cursor": a["cursor"]}),
    get(V, f"search/?q={'x' * 1_000}", 400, code="bad_query"),
    get(V, f"{SEARCH}&cursor=forged", 400, code="bad_query"),
    get(V, "search/?state=nowhere&q=name+~+a", 400, valid=False),
    get(V, f"{SEARCH}&search={{search}}&cursor=0||0|10|", 429, setup="busy"),
    get(V, f"{SEARCH}&search=old&cursor=0||0|10|", 409, code="search_replaced"),
    get(V, f"{J}search/?state=wait&q=name+~+a", 409, code="corrupt_key"),
    post(A, "actions/", 409, {"action": "retry", "id": WAITING}, code="job_not_in_state"),
    post(A, "actions/", 200, RETRY | {"ids": [FAILED_2, "ord_gone"]}, then=THEN["gone"]),
    post(A, "actions/", 404, {"action": "remove", "ids": ["ord_gone"]}, code="job_not_exist"),
    post(A, "actions/", 409, {"action": "retry", "ids": [BROKEN]}, code="job_broken"),
    post(A, "actions/", 200, {"action": "promote", "ids": [DELAYED]}, form=True),
    post(A, "actions/", 200, {"action": "fail", "ids": [WAITING], "reason": "fraud"}, form=True),
    post(A, "actions/", 200, {"action": "retry", "ids": [CHILD], "state": "completed"}),
    post(A, "actions/", 400, {"action": "explode", "ids": [FAILED_1]}, valid=False),
    post(A, "actions/", 400, {"action": "retry", "ids": []}, valid=False),
    post(A, f"{J}actions/", 409, RETRY, code="corrupt_key"),
    post(A, "bulk/", 200, {"action": "promote_all"}, form=True),
    post(A, "bulk/", 200, {"action": "clean", "state": "completed", "grace_ms": "0"}, form=True),
    post(A, "bulk/", 200, {"action": "clean", "grace_ms": 0}),
    *(post(A, "bulk/", 200, {"action": action}) for action in ("pause", "resume")),
    post(A, "bulk/", 400, {"action": "clean"}),  # no grace: what the schema cannot say
    post(A, f"{J}bulk/", 409, {"action": "retry_all"}, code="corrupt_key"),
    post(A, "concurrency/", 200, {"concurrency": "none"}, form=True),
    post(A, "concurrency/", 200, {"concurrency": None}),
    post(A, "concurrency/", 400, {"concurrency": 0}, valid=False),
    post(A, "concurrency/", 400, {}),
    post(A, f"{J}concurrency/", 409, {"concurrency": 2}, code="corrupt_key"),
    post(A, SCHEDULERS, 200, {"action": "remove", "id": "nightly-report"}, form=True),
    post(A, SCHEDULERS, 404, {"action": "remove", "id": "gone"}, code="scheduler_not_exist"),
    post(A, SCHEDULERS, 409, {"action": "run_now", "id": "digest"}, code="scheduler_broken"),
    post(A, J + SCHEDULERS, 409, {"action": "run_now", "id": "x"}, code="corrupt_key"),
    post(A, SCHEDULERS, 400, {"action": "explode", "id": "heartbeat"}, valid=False),
    post(A, "search/act/", 200, REMOVE_MATCHES, then=THEN["moved"]),
    post(A, f"{J}search/act/", 409, {**RETRY, "state": "failed"}),
    post(A, "search/act/", 400, {"action": "fail", "ids": [FAILED_1]}, valid=False),
    # The group's retry leaves the job broken once grouped in failed, and names it.
    post(A, "errors/actions/", 200, GROUP_RETRY, then=THEN["skipped"]),
    post(A, "errors/actions/", 400, {"action": "retry", "group": group_key("ETIMEDOUT")}),
    post(A, "errors/actions/", 400, {"action": "x", "group": DECLINED_GROUP}, valid=False),
    post(A, "errors/actions/", 400, {"action": "retry"}, valid=False),
    post(A, f"{J}errors/actions/", 409, GROUP_RETRY),
    post(E, "edit/", 200, {"id": FAILED_3, "data": '{"customer": "cus_Q1w2E3r"}'}, form=True),
    post(E, "duplicate/", 201, {"id": WAITING}, form=True),
    post(E, "add/", 201, {"name": "charge", "opts": {"delay": 10, "attempts": 2}}),
    post(E, "add/", 201, {"name": "charge", "opts": '{"priority": 3}'}, form=True),
    post(E, "edit/", 400, {"id": FAILED_3, "data": "{nope"}, form=True),  # a form's data: text
    post(E, "duplicate/", 400, {"id": "ord:8f3k"}, form=True, valid=False),
    post(E, "add/", 400, {"name": "charge", "data": "{nope"}, form=True),
    post(E, "add/", 400, {"name": "charge", "opts": {"parent": {}}}, valid=False),
    post(E, "edit/", 404, {"id": "ord_gone", "data": {}}, code="job_not_exist"),
    post(E, "duplicate/", 404, {"id": "ord_gone"}),
    post(E, "edit/", 409, {"id": ACTIVE, "data": {}}, code="job_not_in_state"),
    post(E, "duplicate/", 409, {"id": BROKEN}, code="job_broken"),
    post(E, f"{J}add/", 409, {"name": "charge"}, code="corrupt_key"),
    post(E, "edit/", 413, {"id": FAILED_3, "data": "x" * 200}, code="data_too_large", setup="data"),
    post(E, "duplicate/", 413, {"id": LARGE}, setup="data"),
    post(E, "add/", 413, {"name": "charge", "data": "x" * 200}, setup="data"),
    # The queue on another Redis connection, "staging": the paths at their second server.
    get(V, "/c/staging/queues/bull/orders/", 200, then=lambda a: a["connection"] == "staging"),
    get(V, f"/c/staging/queues/bull/orders/job/{WAITING}", 200),
    get(V, "/c/staging/queues/bull/orders/jobs/?state=wait", 200),
    post(A, "/c/staging/queues/bull/orders/actions/", 409, {**RETRY, "state": "completed"}),
    get(V, "/c/nope/queues/bull/orders/", 404),
    get(V, "/queues/", 200, setup="staging", then=lambda a: len(a["connections"]) == 2),
    # Refused before any view ran, or failing as it runs: every operation alike.
    *every(GETS[:-2] + POSTS, status=404, setup="nope"),
    *every(GETS + POSTS, who=None, status=401, valid=False),  # no session: not as documented
    *every(GETS + POSTS, who=N, status=403),
    *every(POSTS, who=V, status=403, code="forbidden"),
    *every(POSTS, csrf=False, status=403, valid=False, code="csrf_failed"),
    *every(POSTS, status=413, valid=False, setup="upload"),
    *every(POSTS, status=507, code="redis_out_of_memory", setup="full"),
    *every(GETS + POSTS, status=500, setup="crash"),
    *every(GETS[:-1] + POSTS, status=503, setup="gone"),
    # Each POST's body is read as the document says: a field of the wrong type
    # fails the document and is refused, the answer naming it.
    *(
        post(
            case.who, case.path, 400, {**example, name: [{"x": 1}]}, valid=False, then=naming(name)
        )
        for case in POSTS
        if (example := OPERATIONS[resolve(case.url).url_name].example)
        for name in example
        if name != "data"  # any JSON value
    ),
]


class _Request(DjangoOpenAPIRequest):
    """openapi-core's view of a Django request. It reads the body even to check
    an answer; one over Django's limit is refused to every reader (the 413)."""

    @property
    def body(self) -> bytes:
        try:
            return super().body
        except RequestDataTooBig:
            return b""


def checked(spec: OpenAPI, response: Any, status: int, *, valid: bool = True) -> Any:
    """The answer's JSON, once openapi-core found it to be one the document
    describes, exactly, to a request the document accepts, or (not ``valid``) refuses."""
    assert response.status_code == status, (status, response.content[:400])
    request = _Request(response.wsgi_request)
    spec.validate_response(request, DjangoOpenAPIResponse(response))
    with nullcontext() if valid else pytest.raises(OpenAPIError):
        spec.validate_request(request)
    return response.json()


# The document as served, and openapi-core's reading of it: once per process.
SERVED: dict[str, Any] = {}


@pytest.fixture
def document(make_user: Callable[..., Any]) -> dict[str, Any]:
    if not SERVED:
        reader = Client()
        reader.force_login(make_user(V, "reader"))
        answer = reader.get(f"{ROOT}schema/")
        assert (answer.status_code, answer["Content-Type"]) == (200, "application/json")
        SERVED.update(document=answer.json(), spec=OpenAPI.from_dict(answer.json()))
    return dict(SERVED["document"])


@pytest.fixture
def spec(document: dict[str, Any]) -> OpenAPI:
    return SERVED["spec"]  # type: ignore[no-any-return]


@cache
def _handler() -> ClientHandler:
    return ClientHandler(enforce_csrf_checks=True)  # its middleware loaded once


def _client(user: Any) -> Client:
    """A client with the session and the CSRF cookie the security schemes name."""
    client = Client(raise_request_exception=False)
    client.handler = _handler()
    if user is not None:
        client.force_login(user)
    schemes = SERVED["document"]["components"]["securitySchemes"]
    client.cookies[schemes["csrfCookie"]["name"]] = CSRF_TOKEN
    assert set(client.cookies) <= {scheme["name"] for scheme in schemes.values()}
    return client


@contextmanager
def _world(case: Case, user: Any, redis: Redis, settings: Any, monkeypatch: Any) -> Iterator[Any]:
    """What ``case.setup`` makes go wrong around the request, and the ids it makes."""
    if case.setup == "data":
        settings.ECHOMQ_MAX_JOB_DATA_BYTES = 100
    elif case.setup == "upload":  # the body is padded over it
        settings.DATA_UPLOAD_MAX_MEMORY_SIZE = 1_000
    elif case.setup == "crash":
        monkeypatch.setattr(permissions, "can_view", lambda *args: 1 / 0)
    elif case.setup == "gone":
        settings.REDIS_URL = f"redis://127.0.0.1:{free_port()}/0"
        discovery.clear_discovery_cache()
    elif case.setup == "busy":  # a step of this search still running
        label = permissions.user_label(user)
        search_id = search.SEARCHES.start(label)
        with search.SEARCHES._by_user[label][search_id].stepping:
            yield {"search": search_id}
            return
    with redis_full(redis) if case.setup == "full" else nullcontext():
        yield {}


@pytest.mark.parametrize("case", CASES, ids=str)
def test_the_answer_is_one_the_document_declares(
    case: Case,
    dashboard_redis: Redis,
    spec: OpenAPI,
    make_user: Callable[..., Any],
    settings: Any,
    monkeypatch: pytest.MonkeyPatch,
    request: pytest.FixtureRequest,
) -> None:
    # Refused before any view reads: nothing to seed.
    facts = {} if case.status in (401, 403, 500) else _seed(dashboard_redis)
    if case.setup == "staging" or case.path.startswith("/c/"):
        _seed(request.getfixturevalue("staging_redis"))
    user = case.who and make_user(case.who)
    client = _client(user)
    schemes = SERVED["document"]["components"]["securitySchemes"]
    headers = {schemes["csrfHeader"]["name"]: CSRF_TOKEN} if case.csrf else {}
    fields = {**case.body, "padding": "x" * 2_000} if case.setup == "upload" else case.body
    body = (
        "" if fields is None else urlencode(fields, doseq=True) if case.form else json.dumps(fields)
    )
    kind = "application/x-www-form-urlencoded" if case.form else "application/json"
    with _world(case, user, dashboard_redis, settings, monkeypatch) as made:
        url = case.url.format(**facts, **made)
        sent = client.generic(case.method, url, body, kind, headers=headers)
        answer = checked(spec, sent, case.status, valid=case.valid)
    assert not case.code or answer["error"]["code"] == case.code, answer
    assert case.then is None or case.then(answer), answer
    page, _, query = url.partition("?")
    while case.more and None not in (following := case.more(answer)).values():
        answer = checked(spec, client.get(page, {**dict(parse_qsl(query)), **following}), 200)


def test_the_cases_ask_for_every_status_of_every_operation(document: dict[str, Any]) -> None:
    """So an operation added without its cases, or a status without one, fails here."""
    declared = {
        (operation["operationId"], status)
        for item in document["paths"].values()
        for method, operation in item.items()
        if method != "servers"  # a path's second server (other Redis connections)
        for status in operation["responses"]
    }
    views = [(case, resolve(case.url.partition("?")[0]).url_name) for case in CASES]
    assert {view for _, view in views} == set(OPERATIONS)  # every URL of the API, its method:
    assert all((OPERATIONS[view].body is None) == (c.method == "GET") for c, view in views)
    asked = {(OPERATIONS[view].id, str(case.status)) for case, view in views}
    assert asked == declared


def _validator(document: dict[str, Any], schema: dict[str, Any]) -> Draft202012Validator:
    """A validator of ``schema``, whose reference points into the document."""
    resource = Resource.from_contents(document, default_specification=DRAFT202012)
    registry = Registry().with_resource("urn:api", resource)
    return Draft202012Validator({**schema, "$ref": f"urn:api{schema['$ref']}"}, registry=registry)


def test_the_document_is_valid_openapi_3_1_of_generated_schemas(document: dict[str, Any]) -> None:
    """Its objects are valid, every example of a body holds for its schema,
    and no schema is written by hand: the components are the declared Structs
    as msgspec describes them."""
    OpenAPIV31SpecValidator(document).validate()
    assert document["openapi"].startswith("3.1.")
    for item in document["paths"].values():
        if "post" in item:
            body = item["post"]["requestBody"]["content"]["application/json"]
            _validator(document, body["schema"]).validate(body["example"])
    shapes = (*answers.SHAPES, *dashboard_answers.SHAPES, *bodies.BODIES, OpenAPIDocument)
    _, declared = msgspec.json.schema_components(shapes, ref_template="#/components/schemas/{name}")
    assert document["components"]["schemas"] == json.loads(json.dumps(declared))


def _documented_error(document: dict[str, Any], response: Any, status: int, name: str) -> None:
    assert (response.status_code, response["Content-Type"]) == (status, "application/json")
    schema = f"#/components/responses/{name}/content/application~1json/schema"
    _validator(document, {"$ref": schema}).validate(response.json())


SAMPLE = {"prefix": "bull", "name": "orders", "job_id": WAITING, "cohort_id": NO_COHORT}


def test_what_no_operation_takes_gets_the_documented_error(
    dashboard_redis: Redis, document: dict[str, Any], make_user: Callable[..., Any]
) -> None:
    """OPTIONS is no method of the API: its 405 names the one method a URL
    takes, its operation's; a path of no operation is the documented 404."""
    viewer = _client(make_user(V))
    for pattern in api_patterns:
        kwargs = {p: SAMPLE.get(p, "0" * 16) for p in pattern.pattern.converters}
        refused = viewer.options(reverse(f"dashboard:api:{pattern.name}", kwargs=kwargs))
        _documented_error(document, refused, 405, "MethodNotAllowed")
        assert refused["Allow"] == ("POST" if OPERATIONS[pattern.name].body else "GET")
    for path_ in ("nope/", "queues/bull/orders/nope/", "queues/bull/"):
        _documented_error(document, viewer.get(ROOT + path_), 404, "NotFound")


JOBS = "jobs/?state=failed"
TAMPERINGS: dict[str, tuple[str, Callable[[Any, Any], object]]] = {
    "a field the document lacks": (JOBS, lambda _, a: a["jobs"][0].update(surprise=1)),
    "a field missing": (JOBS, lambda _, a: a["jobs"][0].pop("due")),
    "a field of another type": (JOBS, lambda _, a: a["jobs"][0].update(attempts="3")),
    "a state that does not exist": (JOBS, lambda _, a: a.update(state="lost")),
    "a status the operation does not answer": (JOBS, lambda r, _: setattr(r, "status_code", 418)),
    "HTML instead of JSON": (JOBS, lambda r, _: r.__setitem__("Content-Type", "text/html")),
    "an error code its status does not have": ("job/x", lambda _, a: a["error"].update(code="x")),
    # A cohort is readable (every field, no problem) or not (id, at_ms, problem only).
    "a cohort half readable": ("cohorts/", lambda _, a: a["cohorts"][1].update(problem=None)),
    "a cohort half unreadable": ("cohorts/", lambda _, a: a["cohorts"][1].update(action="retry")),
}


@pytest.mark.parametrize("tampering", TAMPERINGS)
def test_an_answer_the_document_does_not_describe_fails_validation(
    dashboard_redis: Redis, spec: OpenAPI, make_user: Callable[..., Any], tampering: str
) -> None:
    _seed(dashboard_redis)
    path_, tamper = TAMPERINGS[tampering]
    response = _client(make_user(V)).get(get(V, path_, 0).url)
    answer = checked(spec, response, response.status_code)  # the real answer passes
    tamper(response, answer)
    response.content = json.dumps(answer).encode()
    with pytest.raises(OpenAPIError):
        checked(spec, response, response.status_code)


# Mounted under a prefix of a host project's choosing (this module is the URLconf).
urlpatterns = [path("ops/queues/", include("dashboard.urls"))]


def test_the_document_follows_the_mount_point(
    dashboard_redis: Redis, make_user: Callable[..., Any], settings: Any
) -> None:
    settings.ROOT_URLCONF = __name__
    _seed(dashboard_redis)
    viewer = Client()
    viewer.force_login(make_user(V))
    document = viewer.get("/ops/queues/api/schema/").json()
    assert document["servers"] == [{"url": "/ops/queues/api"}]
    spec, odd = OpenAPI.from_dict(document), "/ops/queues/api/queues/bull/billing~seu~~2/"
    checked(spec, viewer.get(odd), 200)
    checked(spec, viewer.get(f"{odd}job/{ODD_JOB}"), 200)


# 15 examples per operation and kind of path: the run stays well under 30 s.
FUZZ = hypothesis_settings(
    max_examples=15,
    derandomize=True,
    database=None,
    deadline=None,
    suppress_health_check=list(HealthCheck),
)
CONFORMANCE = ("status_code", "content_type", "response_headers", "response_schema")


def test_a_seeded_fuzz_finds_no_answer_outside_the_document(
    dashboard_redis: Redis, document: dict[str, Any], make_user: Callable[..., Any]
) -> None:
    """Schemathesis makes requests the document allows (random bodies, queries,
    ids; real and unknown queues), sent as the actor with the session and CSRF
    token through Django's WSGI handler; every answer must be documented."""
    _seed(dashboard_redis)
    app = get_wsgi_application()
    cookies = {name: morsel.value for name, morsel in _client(make_user(A)).cookies.items()}
    headers = {document["components"]["securitySchemes"]["csrfHeader"]["name"]: CSRF_TOKEN}
    conformance = [getattr(checks, f"{name}_conformance") for name in CONFORMANCE]
    found = schemathesis.openapi.from_dict(document).get_all_operations()
    operations = [result.ok() for result in found]
    assert len(operations) == len(OPERATIONS)
    for operation in operations:
        queue = any(p.name == "prefix" for p in operation.path_parameters)
        known = {"prefix": "bull", "name": "orders"} if queue else None
        cases = st.one_of(
            operation.as_strategy(path_parameters=known, cookies=cookies),
            operation.as_strategy(cookies=cookies),
        )

        @hypothesis_settings(FUZZ)
        @given(case=cases)
        def answer_is_documented(case: Any) -> None:
            response = case.call(app=app, headers=headers, cookies=cookies)
            every_check = [not_a_server_error, *conformance]
            case.validate_response(response, checks=every_check, headers=headers)

        answer_is_documented()
