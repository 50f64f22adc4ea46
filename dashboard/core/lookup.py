"""Queue names and job ids from URLs and forms, validated before they touch a
key: a name that could not be a key, a prefix not served (on the connection
the URL names), a queue with no trace in Redis or a malformed job id is a 404.
"""

from __future__ import annotations

from collections.abc import Iterable

from django.http import Http404
from redis import Redis
from redis.asyncio import Redis as AsyncRedis

from dashboard.core import connections
from queues import discovery
from queues.keys import InvalidName, validate_job_id
from queues.numerals import NotWholeNumber, parse_whole
from queues.read.refs import DEFAULT_CONNECTION, QueueRef


def _serving(connection: str | None) -> connections.Connection:
    """``connection`` (None: the running view's); an unknown one serves nothing."""
    name = connection or connections.current()
    return connections.named(name) or connections.Connection(name, None, (), ())


def all_queues(client: Redis, connection: str | None = None) -> list[QueueRef]:
    """Every queue of ``connection`` (None: the running view's), whose client is ``client``."""
    served = _serving(connection)
    found = discovery.discover_queues(client, list(served.prefixes), list(served.queues))
    # Discovery names queues as the runtime does, on no connection in particular.
    if served.name == DEFAULT_CONNECTION:
        return found
    return [ref.on(served.name) for ref in found]


def split_served(refs: Iterable[QueueRef]) -> tuple[set[QueueRef], list[QueueRef]]:
    """Of ``refs``: those served whatever Redis holds (the configured ones), and
    those served if they exist in Redis (under a served prefix of their
    connection). The rest never are (an unknown connection's included)."""
    wanted = set(refs)
    serving = {ref.connection: _serving(ref.connection) for ref in wanted}
    served = {ref for ref in wanted if ref in serving[ref.connection].queues}
    maybe = (ref for ref in wanted - served if ref.prefix in serving[ref.connection].prefixes)
    return served, sorted(maybe)


async def served_queues_async(client: AsyncRedis, refs: Iterable[QueueRef]) -> set[QueueRef]:
    """Those of ``refs`` the pages show, so a live socket may watch them (one round trip)."""
    served, if_they_exist = split_served(refs)
    found = await discovery.queues_exist_async(client, if_they_exist) if if_they_exist else []
    return served | {ref for ref, exists in zip(if_they_exist, found, strict=True) if exists}


def queue_or_404(client: Redis, prefix: str, name: str) -> QueueRef:
    ref, if_it_exists = queue_to_read(prefix, name)
    if if_it_exists and not discovery.queue_exists(client, ref):
        raise no_queue(ref)
    return ref


def queue_to_read(prefix: str, name: str) -> tuple[QueueRef, bool]:
    """:func:`queue_or_404` without its Redis read: the queue, and whether it
    is served only if it exists in Redis (for a reader that asks that in its
    own first round trip, then 404s with :func:`no_queue`). A name that could
    not be a queue, or a prefix not served, is a 404 here."""
    try:
        ref = QueueRef(prefix, name, connections.current())
    except InvalidName:
        raise Http404(f"No queue named {prefix}:{name}") from None
    served, if_they_exist = split_served([ref])
    if not served and not if_they_exist:
        raise no_queue(ref)
    return ref, not served


def no_queue(ref: QueueRef) -> Http404:
    return Http404(f"No queue named {ref.qualified}")


def job_id_or_404(job_id: str) -> str:
    try:
        return validate_job_id(job_id)
    except InvalidName:
        raise Http404("Not a valid job id") from None


def clean_job_ids(raw_ids: list[str]) -> list[str]:
    """Valid, de-duplicated ids in the order given; invalid ones raise InvalidName."""
    seen: dict[str, None] = {}
    for raw in raw_ids:
        seen[validate_job_id(raw.strip())] = None
    return list(seen)


def int_param(value: str | None, default: int, *, lowest: int = 0, highest: int = 10**9) -> int:
    """A whole-number query parameter (queues.numerals), brought within
    ``lowest``..``highest``; anything else falls back to the default."""
    if value is None:
        return default
    try:
        number = parse_whole(value)
    except NotWholeNumber:
        return default
    return max(lowest, min(highest, number))
