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

import os
import re
from collections.abc import Callable
from typing import Any

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
