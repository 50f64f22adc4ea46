"""What the history collector says of itself, in its status hash.

``COLLECTOR_STATUS`` holds who collects and when it last caught up (its lag,
on the pages and in ``/metrics``), and one field per queue whose history it
stopped (``stopped_history_field``). A queue's history stops when one of its
history keys is broken (a hand SET of its state, a string where a minute's
hash belongs): that used to fail the collector's pass for every queue, a
warning a second, and after a restart too. Now it costs that queue's history
only: the collector leaves it out, says why here (the queue's page and
``/metrics`` show it), logs it once per reason, and tries it again every
``RETRY_S``; once all it read of the queue is recorded again, the report is
cleared. A status hash of the wrong type loses the report, logged once, and
nothing else.
"""

from __future__ import annotations

import logging
import math
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from redis import Redis
from redis.exceptions import ResponseError

from queues import codec
from queues.keys import COLLECTOR_STATUS, stopped_history_field
from queues.read.refs import QueueRef

log = logging.getLogger("queues.collector")

# A stopped queue is tried again this often: a repaired key is seen within it.
RETRY_S = 10.0
_STOPPED = stopped_history_field("")


@dataclass(slots=True)
class _Stop:
    why: str
    retry_at: float  # time.monotonic()


class CollectorReport:
    """The status hash as one collector thread writes it, and the queues it
    stopped (with when to try each again)."""

    def __init__(self, client: Redis) -> None:
        self.client = client
        self._stops: dict[QueueRef, _Stop] = {}
        # The queues the status hash names (this collector's or a predecessor's).
        self._reported: set[str] = set()
        self.next_retry = math.inf  # the soonest retry_at of the stopped queues
        self._failed = False

    def take_over(self) -> None:
        """Start from what the status hash says: a predecessor may have
        stopped queues that were repaired since."""
        self._stops.clear()
        self.next_retry = math.inf
        names = self._on_status(self.client.hkeys, COLLECTOR_STATUS) or []
        fields = (codec.text(name) or "" for name in names)
        self._reported = {f[len(_STOPPED) :] for f in fields if f.startswith(_STOPPED)}

    def caught_up(self, holder: str) -> None:
        """Say that ``holder`` read and recorded every stream to its end, now."""
        mapping = {"holder": holder, "caught_up_ms": int(time.time() * 1000)}
        self._on_status(self.client.hset, COLLECTOR_STATUS, mapping=mapping)

    @property
    def watching(self) -> bool:
        """Whether any queue is stopped or reported (else nothing can resume)."""
        return bool(self._stops or self._reported)

    def resting(self, ref: QueueRef, now: float) -> bool:
        """Whether the queue's history is stopped and not due to be tried again."""
        stop = self._stops.get(ref)
        return stop is not None and now < stop.retry_at

    def stop(self, ref: QueueRef, why: str) -> None:
        """Leave the queue out for RETRY_S; a reason not given before for it
        is logged and reported."""
        known = self._stops.get(ref)
        self._stops[ref] = _Stop(why, time.monotonic() + RETRY_S)
        self.next_retry = min(stop.retry_at for stop in self._stops.values())
        if known is not None and known.why == why:
            return
        log.warning(
            "history of %s stopped: %s (the other queues' history goes on; this one's"
            " resumes once that key is repaired or deleted)",
            ref.qualified,
            why,
        )
        field = stopped_history_field(ref.qualified)
        if self._on_status(self.client.hset, COLLECTOR_STATUS, field, why) is not None:
            self._reported.add(ref.qualified)

    def recorded(self, ref: QueueRef) -> None:
        """All the collector read of the queue is recorded: a stop is over."""
        if ref in self._stops:
            del self._stops[ref]
            self.next_retry = min((s.retry_at for s in self._stops.values()), default=math.inf)
            log.info("history of %s resumed", ref.qualified)
        if ref.qualified in self._reported:
            self._forget([ref.qualified])

    def prune(self, refs: Iterable[QueueRef]) -> None:
        """Clear the reports of queues that are gone."""
        gone = self._reported - {ref.qualified for ref in refs}
        if gone:
            self._forget(sorted(gone))

    def _forget(self, qualified: list[str]) -> None:
        fields = [stopped_history_field(name) for name in qualified]
        if self._on_status(self.client.hdel, COLLECTOR_STATUS, *fields) is not None:
            self._reported.difference_update(qualified)

    def _on_status(self, command: Callable[..., Any], *args: Any, **options: Any) -> Any:
        """A command on the status hash; None when the hash has another type."""
        try:
            return command(*args, **options)
        except ResponseError as error:
            if not self._failed:
                self._failed = True
                log.warning("the collector cannot use %s: %s", COLLECTOR_STATUS, error)
            return None
