"""Queue names and job ids from URLs and forms, validated before they touch a key.

A name that could not be a key, a prefix we do not serve, or a queue with no
trace in Redis is a 404; so is a malformed job id. Never a 500.
"""

from __future__ import annotations

from collections.abc import Iterable

from django.http import Http404
from redis import Redis
from redis.asyncio import Redis as AsyncRedis

from dashboard import conf
from queues import discovery
from queues.keys import InvalidName, validate_job_id
from queues.read.refs import QueueRef


def configured_queues() -> list[QueueRef]:
    prefixes = served_prefixes()
    refs = []
    for entry in conf.queues():
        try:
            refs.append(QueueRef.parse(entry, default_prefix=prefixes[0] if prefixes else "bull"))
        except InvalidName:
            continue  # a bad setting hides one queue rather than breaking every page
    return refs


def served_prefixes() -> list[str]:
    return conf.prefixes()


def all_queues(client: Redis) -> list[QueueRef]:
    return discovery.discover_queues(client, served_prefixes(), configured_queues())


def split_served(refs: Iterable[QueueRef]) -> tuple[set[QueueRef], list[QueueRef]]:
    """Of ``refs``: those served whatever Redis holds (the configured ones), and
    those served if they exist in Redis (under a served prefix). The rest never are."""
    wanted, configured, prefixes = set(refs), set(configured_queues()), set(served_prefixes())
    served = wanted & configured
    return served, sorted(ref for ref in wanted - served if ref.prefix in prefixes)


def served_queues(client: Redis, refs: Iterable[QueueRef]) -> set[QueueRef]:
    """Those of ``refs`` the pages show (one round trip for all of them)."""
    served, if_they_exist = split_served(refs)
    found = discovery.queues_exist(client, if_they_exist) if if_they_exist else []
    return served | {ref for ref, exists in zip(if_they_exist, found, strict=True) if exists}


async def served_queues_async(client: AsyncRedis, refs: Iterable[QueueRef]) -> set[QueueRef]:
    """:func:`served_queues` on an asyncio client: the queues a live socket may watch."""
    served, if_they_exist = split_served(refs)
    found = await discovery.queues_exist_async(client, if_they_exist) if if_they_exist else []
    return served | {ref for ref, exists in zip(if_they_exist, found, strict=True) if exists}


def queue_or_404(client: Redis, prefix: str, name: str) -> QueueRef:
    try:
        ref = QueueRef(prefix, name)
    except InvalidName:
        raise Http404(f"No queue named {prefix}:{name}") from None
    if ref not in served_queues(client, [ref]):
        raise Http404(f"No queue named {ref.qualified}")
    return ref


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
    """A non-negative integer query parameter; garbage falls back to the default."""
    try:
        number = int(value) if value is not None else default
    except ValueError:
        return default
    return max(lowest, min(highest, number))
