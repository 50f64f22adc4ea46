"""Which queues exist, pushed to the pages that list them: one watcher per
process looks every ``WATCH_INTERVAL_S`` and tells the listening sockets of a change.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from dashboard.core import connections
from dashboard.core.lookup import all_queues
from dashboard.core.redis import get_client
from dashboard.live.cancellation import raise_if_cancelled
from dashboard.shared.connection_groups import OUTAGES
from queues.read.refs import DEFAULT_CONNECTION

log = logging.getLogger("echomq.live")

WATCH_INTERVAL_S = 3.0
RETRY_DELAY_S = 5.0


def current_queues() -> list[str]:
    """Every queue's address in the overview's order (blocking). Another connection
    that does not answer is left out; the default one raises (the hub hears of it)."""
    found: list[str] = []
    for connection in connections.configured():
        try:
            refs = all_queues(get_client(connection.name), connection.name)
        except OUTAGES:
            if connection.name == DEFAULT_CONNECTION:
                raise
            continue
        found.extend(ref.address for ref in refs)
    return found


@dataclass
class QueueSetWatcher:
    """One process's watching task. A new listener is added, then reads ``known``
    (once ``ready``), so no change falls between."""

    on_error: Callable[[Exception], None] = lambda error: None
    listeners: set[Callable[[dict[str, Any]], None]] = field(default_factory=set)
    task: asyncio.Task[None] | None = None
    known: list[str] = field(default_factory=list)
    ready: asyncio.Event = field(default_factory=asyncio.Event)

    def start(self) -> None:
        self.task = asyncio.create_task(self._run(), name="echomq-live:queues")

    def cancel(self) -> None:
        if self.task is not None:
            self.task.cancel()

    async def stop(self) -> None:
        self.cancel()
        if self.task is not None:
            with contextlib.suppress(asyncio.CancelledError):
                await self.task

    async def _run(self) -> None:
        while True:
            raise_if_cancelled()
            try:
                queues = await asyncio.to_thread(current_queues)
                if self.ready.is_set() and queues != self.known:
                    for listener in list(self.listeners):
                        listener({"type": "live.queues", "queues": queues})
                self.known = queues
                self.ready.set()
                await asyncio.sleep(WATCH_INTERVAL_S)
            except Exception as exc:
                # Redis down: keep watching once it is back.
                self.on_error(exc)
                log.warning("queue watcher: %r; retrying in %.0fs", exc, RETRY_DELAY_S)
                await asyncio.sleep(RETRY_DELAY_S)
