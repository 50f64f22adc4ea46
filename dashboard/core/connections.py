"""The Redis servers one dashboard serves: ``default`` (``REDIS_URL``,
``ECHOMQ_PREFIXES``, ``ECHOMQ_QUEUES``) and those of ``ECHOMQ_CONNECTIONS``
(docs/configuration.md), each with its URL, prefixes and listed queues. A
request's connection comes from its URL (``on_connection``) as a scoped value,
like Django's active language, so no queue view names its connection.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from contextvars import ContextVar
from dataclasses import dataclass
from functools import wraps
from typing import Any, TypeVar

from django.http import HttpRequest, HttpResponse

from dashboard.core import conf
from queues.connection import url_problem
from queues.keys import InvalidName, validate_prefix
from queues.read.refs import DEFAULT_CONNECTION, QueueRef

V = TypeVar("V", bound=Callable[..., HttpResponse])

NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_-]{0,39}\Z")
_FIELDS = {"name", "url", "prefixes", "queues"}


@dataclass(frozen=True, slots=True)
class Connection:
    name: str
    url: str | None  # None: the default connection's private server (dashboard.core.redis)
    prefixes: tuple[str, ...]
    queues: tuple[QueueRef, ...]  # always listed, on this connection


def _connection(
    name: str, url: str | None, prefixes: Sequence[str], queues: Sequence[str]
) -> Connection:
    listed = []
    for entry in queues:
        try:
            listed.append(QueueRef.parse(entry, prefixes[0] if prefixes else "bull").on(name))
        except InvalidName:
            continue  # a bad setting hides one queue rather than breaking every page
    return Connection(name, url, tuple(prefixes), tuple(listed))


def default() -> Connection:
    return _connection(DEFAULT_CONNECTION, conf.redis_url(), conf.prefixes(), conf.queues())


def _entry_problems(position: int, entry: object, seen: set[str]) -> list[str]:
    where = f"ECHOMQ_CONNECTIONS entry {position}"
    if not isinstance(entry, dict):
        return [f"{where} must be an object with name, url, prefixes and queues"]
    found = []
    name = entry.get("name")
    if isinstance(name, str) and NAME.match(name):
        where = f"ECHOMQ_CONNECTIONS connection {name!r}"
        if name in seen:
            found.append(
                f"{where} is named twice"
                + (" (default is REDIS_URL's connection)" if name == DEFAULT_CONNECTION else "")
            )
        seen.add(name)
    else:
        found.append(
            f"{where} has name {name!r}: a name is 1-40 letters, digits, '-' or '_' "
            "(it goes into URLs), starting with a letter or digit"
        )
    unknown = sorted(set(entry) - _FIELDS)
    if unknown:
        found.append(f"{where} has unknown fields: {', '.join(map(str, unknown))}")
    url = entry.get("url")
    if not isinstance(url, str) or not url.strip():
        found.append(f"{where} has no url (e.g. redis://host:6379/0)")
    elif (wrong := url_problem(url.strip())) is not None:
        found.append(f"{where} has a url Redis clients cannot use: {wrong}")
    for field in ("prefixes", "queues"):
        value = entry.get(field, [])
        if not isinstance(value, list | tuple) or not all(isinstance(v, str) for v in value):
            found.append(f"{where}: {field} must be a list of strings")
    prefixes = entry.get("prefixes", [])
    for prefix in prefixes if isinstance(prefixes, list | tuple) else ():
        try:
            validate_prefix(str(prefix))
        except InvalidName as error:
            found.append(f"{where}: {error}")
    return found


def _read() -> tuple[list[Connection], list[str]]:
    """``ECHOMQ_CONNECTIONS``: its right entries, and what is wrong with the
    others, one sentence each (the checks name them; they are not served)."""
    raw = conf.connections()
    if not isinstance(raw, list | tuple):
        return [], ["ECHOMQ_CONNECTIONS must be a list of connections"]
    extra: list[Connection] = []
    found: list[str] = []
    seen = {DEFAULT_CONNECTION}
    for position, entry in enumerate(raw, start=1):
        wrong = _entry_problems(position, entry, seen)
        found += wrong
        if not wrong:
            prefixes = entry.get("prefixes") or ["bull"]
            url = entry["url"].strip()
            extra.append(_connection(entry["name"], url, prefixes, entry.get("queues", [])))
    return extra, found


def problems() -> list[str]:
    """What is wrong with ``ECHOMQ_CONNECTIONS`` ([] when right)."""
    return _read()[1]


def configured() -> list[Connection]:
    """Every connection served, the default first (the overview's group order)."""
    return [default(), *_read()[0]]


def named(name: str) -> Connection | None:
    if name == DEFAULT_CONNECTION:
        return default()
    return next((c for c in _read()[0] if c.name == name), None)


def several() -> bool:
    """More than the default connection: the pages then name each queue's."""
    return bool(_read()[0])


# ------------------------------------------------------------ the request's connection

_current: ContextVar[str] = ContextVar("echomq_connection", default=DEFAULT_CONNECTION)


def current() -> str:
    """The connection the view running now serves (its URL's; else the default)."""
    return _current.get()


def on_connection(view: V) -> V:
    """``view`` for a URL that names its connection (``connection=``), serving it.

    An unknown name is not refused here but where the view asks for its client
    (``redis.redis_url``): after the view's permission check, so that nobody
    logged out learns which names exist."""

    @wraps(view)
    def wrapper(request: HttpRequest, *args: Any, connection: str, **kwargs: Any) -> HttpResponse:
        token = _current.set(connection)
        try:
            return view(request, *args, **kwargs)
        finally:
            # Reset, not left set: a pool thread runs the next request in the same context.
            _current.reset(token)

    return wrapper  # type: ignore[return-value]
