"""The API's JSON answers, Structs and plain values, by one msgspec encoder built
once (the fastest measured: docs/benchmarks.md, issue 25): text as UTF-8, NaN
and Infinity (another writer's job data may hold them) as null, what msgspec
cannot encode (a lazy translation, a date) through Django's encoder."""

from __future__ import annotations

from typing import Any

import msgspec
from django.core.serializers.json import DjangoJSONEncoder
from django.http import HttpResponse

from queues import codec

_DJANGO = DjangoJSONEncoder()


def _other(value: Any) -> Any:
    # msgspec writes str itself, not its subclasses (SafeString: rendered rows).
    return str.__str__(value) if isinstance(value, str) else _DJANGO.default(value)


_ENCODER = msgspec.json.Encoder(enc_hook=_other)


def _printable(value: Any) -> Any:
    """``value`` with every text in it printable (codec.printable)."""
    if isinstance(value, msgspec.Struct):
        value = msgspec.to_builtins(value)
    if isinstance(value, str):
        return codec.printable(value)
    if isinstance(value, dict):
        return {_printable(key): _printable(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [_printable(item) for item in value]
    return value


class JsonResponse(HttpResponse):
    """An ``application/json`` answer of ``data`` (a Struct, or any JSON-able value)."""

    def __init__(self, data: Any, **kwargs: Any) -> None:
        kwargs.setdefault("content_type", "application/json")
        try:
            content = _ENCODER.encode(data)
        except UnicodeEncodeError:
            # Half a character in a job's JSON (data, progress, a return value):
            # rare, so looked for only when the encoder meets one.
            content = _ENCODER.encode(_printable(data))
        super().__init__(content=content, **kwargs)
