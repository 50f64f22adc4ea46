"""Every /api/ answer of tests/test_openapi.py's full walk, written to a file
for a before/after diff of two trees (not a test: run it by name).

    API_DUMP=/tmp/after.txt .venv/bin/python -m pytest tests/api_dump.py -n 0 -p no:randomly
    (cd /tmp/main && API_DUMP=/tmp/before.txt ../wt/x/.venv/bin/python -m pytest tests/api_dump.py)
    diff /tmp/before.txt /tmp/after.txt

The walk seeds the same data on both trees; the bytes of each answer are
written as they are, with the moments (13-digit milliseconds, times of day,
cohort ids) normalised. The document itself (``schema/``) is left out.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Callable
from typing import Any
from urllib.parse import urlencode

import pytest
from redis import Redis

from tests import test_openapi

_MOMENTS = re.compile(
    rb"[0-9]{13}-[0-9a-f]+|1[0-9]{12}|[0-9]{4}-[0-9]{2}-[0-9]{2}[ T][0-9:.]+"
    rb"|(?<=search\":\")[\w-]{12}|(?<=search=)[\w-]{12}"
    rb"|(?<=\"delay\":)[0-9]{4,}|(?<=\"ttl_ms\":)[0-9]+|(?<=-)[0-9a-f]{8}(?=[\"/])"
)


def _body(request: Any) -> bytes:
    try:
        return bytes(request.body[:300])
    except Exception:  # over Django's limit: the 413's request
        return b"<too large>"


def test_dump_every_api_answer(
    dashboard_redis: Redis,
    make_user: Callable[..., Any],
    monkeypatch: pytest.MonkeyPatch,
    settings: Any,
) -> None:
    users = {role: make_user(role) for role in ("viewer", "actor", "editor", "nonstaff")}
    document = test_openapi._client(users["viewer"]).get(test_openapi.url("schema")).json()
    lines: list[bytes] = []
    checked = test_openapi.Checked.__call__

    def record(self: Any, response: Any, status: int, **kwargs: Any) -> Any:
        request = response.wsgi_request
        if not request.path.endswith("/schema/"):
            said = f"{request.method} {request.get_full_path()} {_body(request)!r} -> "
            said += f"{response.status_code}\n"
            lines.append(_MOMENTS.sub(b"<t>", said.encode() + response.content) + b"\n")
        return checked(self, response, status, **kwargs)

    monkeypatch.setattr(test_openapi.Checked, "__call__", record)
    try:
        test_openapi.test_every_documented_answer_is_given_and_matches_the_document(
            dashboard_redis, users, document, monkeypatch, settings
        )
    finally:
        with open(os.environ.get("API_DUMP", "api_dump.txt"), "wb") as out:
            out.writelines(lines)


# Bodies of every kind of wrong, for each POST: what each field is refused with.
_BAD_VALUES: list[Any] = [None, "", 5, 1.5, True, [], ["x", 1], {}, "\ud800", "a:b", "0"]
_POSTS = {
    "job_actions": ("action", "ids", "id", "state", "reason"),
    "queue_actions": ("action", "state", "grace_ms"),
    "global_concurrency": ("concurrency",),
    "scheduler_actions": ("action", "id"),
    "error_group_actions": ("action", "group"),
    "search_act": ("action", "state", "ids"),
    "edit_job_data": ("id", "data"),
    "duplicate_job": ("id",),
    "add_job": ("name", "data", "opts"),
}
_GOOD = {
    "action": "retry",
    "ids": ["f3"],
    "id": "f3",
    "state": "failed",
    "reason": "r",
    "grace_ms": 0,
    "concurrency": 2,
    "group": "0" * 16,
    "data": {"a": 1},
    "name": "send",
    "opts": {"delay": 1},
}


def test_dump_every_bad_body(
    dashboard_redis: Redis, make_user: Callable[..., Any], settings: Any
) -> None:
    test_openapi._seed(dashboard_redis)
    client = test_openapi._client(make_user("superuser"))
    lines: list[bytes] = []
    for name, fields in _POSTS.items():
        target = test_openapi.url(name)
        raw = [b"[]", b"5", b'{"id": "1", "id": "2"}', b"{nope", b'{"x": NaN}', b""]
        sent: list[tuple[str, Any]] = [("json", body) for body in raw]
        for field in fields:
            good = {key: _GOOD[key] for key in fields if key != field}
            sent.append(("json", json.dumps(good).encode()))  # the field left out
            for value in _BAD_VALUES:
                sent.append(("json", json.dumps({**good, field: value}).encode()))
                if isinstance(value, str) and value != "\ud800":
                    sent.append(("form", urlencode({**good, field: value}, doseq=True)))
        for kind, body in sent:
            content_type = (
                "application/json" if kind == "json" else "application/x-www-form-urlencoded"
            )
            response = client.post(target, body, content_type=content_type)
            said = f"POST {name} {kind} {body!r} -> {response.status_code}\n".encode()
            lines.append(_MOMENTS.sub(b"<t>", said + response.content) + b"\n")
    with open(os.environ.get("API_DUMP", "api_dump.txt") + ".bad", "wb") as out:
        out.writelines(lines)
