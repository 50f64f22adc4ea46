"""The API's JSON answers, encoded by python-rapidjson.

Django's ``JsonResponse`` goes through the standard library's encoder, which
builds a new C encoder on every call and writes ``", "`` / ``": "`` padding.
The overview's JSON (21 queues, each with counts, two 30-point series and its
recent finishes) took 0.29 ms of the request to encode that way and 0.05 ms
with this encoder, built once (in-process, 2026-12-01); that was about a third
of the 1.1 ms the overview JSON had grown since issue 9 added health by
failure rate (bench/dashboard.py, alternating pairs, docs/benchmarks.md).

The answers are what ``JsonResponse`` gave, compact: NaN stays ``NaN`` as the
standard library writes it (job data parsed from Redis may hold one, and an
answer must never become a 500), keys are strings, and what rapidjson cannot
encode itself (a lazy translation string, a date) goes through Django's own
encoder.
"""

from __future__ import annotations

from typing import Any

import rapidjson
from django.core.serializers.json import DjangoJSONEncoder
from django.http import HttpResponse

from queues import codec

_DJANGO = DjangoJSONEncoder()


class _Encoder(rapidjson.Encoder):
    def default(self, value: Any) -> Any:
        return _DJANGO.default(value)


_ENCODER = _Encoder(number_mode=rapidjson.NM_NAN, ensure_ascii=True)


def _printable(value: Any) -> Any:
    """``value`` with every text in it printable (codec.printable)."""
    if isinstance(value, str):
        return codec.printable(value)
    if isinstance(value, dict):
        return {_printable(key): _printable(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [_printable(item) for item in value]
    return value


class JsonResponse(HttpResponse):
    """An ``application/json`` answer of ``data`` (any JSON-able value)."""

    def __init__(self, data: Any, **kwargs: Any) -> None:
        kwargs.setdefault("content_type", "application/json")
        try:
            content = _ENCODER(data)
        except UnicodeEncodeError:
            # Half a character in a job's JSON (data, progress, a return value):
            # rare, so looked for only when the encoder meets one.
            content = _ENCODER(_printable(data))
        super().__init__(content=content, **kwargs)
