"""Every queue of every Redis connection, grouped by connection, for the
overview and ``/api/queues/``. A server that does not answer is one group
marked unreachable, asked again only after ``RETRY_UNREACHABLE_S``, so one that
hangs costs its timeouts once a while, not on every live refetch.
"""

from __future__ import annotations

import functools
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TypeVar

from redis import Redis
from redis.exceptions import ConnectionError as RedisConnectionError
from redis.exceptions import TimeoutError as RedisTimeoutError

from dashboard.core import connections
from dashboard.core.lookup import all_queues
from dashboard.core.redis import failing_over, get_client
from dashboard.shared.health import Workers
from queues.read import answers, counts
from queues.read.history import with_recent_series
from queues.read.refs import QueueRef
from queues.sentinel import is_sentinel_url

# What "the server did not answer" looks like (a WRONGTYPE reply is an answer);
# any other error is a 500 to fix.
OUTAGES = (RedisConnectionError, RedisTimeoutError, OSError)


@dataclass(slots=True)
class ConnectionGroup:
    name: str
    url: str | None = None  # the connection's (None: the default's private server)
    # Every queue its Redis holds (discovery), in name order.
    refs: list[QueueRef] = field(default_factory=list)
    # The counts read: all queues for the JSON API, the page's rows for the overview.
    summaries: list[counts.QueueSummary] = field(default_factory=list)
    # Why its Redis did not answer ("" while it does).
    unreachable: str = ""
    # Behind Sentinel, while its master is being replaced: what the sentinels do.
    failing_over: str = ""
    # Connected workers of the queues asked about; None when not counted.
    workers: dict[QueueRef, Workers] | None = None

    @property
    def reachable(self) -> bool:
        return not self.unreachable

    def as_json(self) -> answers.Connection:
        return answers.Connection(
            name=self.name,
            reachable=self.reachable,
            error=self.unreachable or None,
            failing_over=bool(self.failing_over),
            queues=len(self.summaries),
        )


CountWorkers = Callable[[Redis, list[counts.QueueSummary]], dict[QueueRef, Workers] | None]
T = TypeVar("T")


RETRY_UNREACHABLE_S = 15.0
RETRY_SENTINEL_S = 2.0
# (connection name, URL) → (when to ask it again, monotonic s; what it said
# then; what the sentinels said, if it is failing over).
_unreachable: dict[tuple[str, str | None], tuple[float, str, str]] = {}


def discovered() -> list[ConnectionGroup]:
    """One group per configured connection with its queues (no counts yet)."""
    groups = []
    for connection in connections.configured():
        group = ConnectionGroup(connection.name, connection.url)
        group.refs = ask(group, functools.partial(all_queues, connection=connection.name)) or []
        groups.append(group)
    return groups


def ask(group: ConnectionGroup, question: Callable[[Redis], T]) -> T | None:
    """``question`` put to the group's Redis; None (the group marked unreachable)
    when it does not answer; with one connection the outage is raised (a 503)."""
    if group.unreachable:
        return None
    server = (group.name, group.url)
    several = connections.several()
    retry_at, said, failover = _unreachable.get(server, (0.0, "", ""))
    if several and time.monotonic() < retry_at:
        group.unreachable, group.failing_over = said, failover
        return None
    try:
        answer = question(get_client(group.name))
    except OUTAGES as error:
        if not several:
            raise
        group.refs, group.summaries = [], []
        group.unreachable = str(error) or type(error).__name__
        replacing = failing_over(group.name)
        group.failing_over = replacing.describe() if replacing is not None else ""
        # Behind Sentinel a master that does not answer is replaced in seconds
        # (the sentinels may not even have seen it down yet): ask again sooner.
        sentinels = group.url is not None and is_sentinel_url(group.url)
        wait = RETRY_SENTINEL_S if sentinels else RETRY_UNREACHABLE_S
        _unreachable[server] = (time.monotonic() + wait, group.unreachable, group.failing_over)
        return None
    _unreachable.pop(server, None)
    return answer


def read_summaries(
    group: ConnectionGroup,
    refs: list[QueueRef],
    count_workers: CountWorkers | None = None,
    *,
    history_minutes: int = 0,
) -> None:
    """The counts (and workers) of ``refs`` into the group; ``history_minutes``:
    a queue without BullMQ metrics gets that much of the dashboard's history
    as its series (one round trip: the overview's sparklines)."""

    def read(client: Redis) -> None:
        group.summaries = counts.queue_summaries(client, refs)
        if history_minutes:
            group.summaries = with_recent_series(client, group.summaries, history_minutes)
        if count_workers is not None:
            group.workers = count_workers(client, group.summaries)

    if refs:
        ask(group, read)


def queue_groups() -> list[ConnectionGroup]:
    """Every group with the counts of all its queues (the JSON API's list)."""
    groups = discovered()
    for group in groups:
        read_summaries(group, group.refs)
    return groups
