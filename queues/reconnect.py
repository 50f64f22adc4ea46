"""Riding out a Redis outage: a bounded, growing wait between attempts, one log
line when the outage starts and one when it ends.

redis-py and our auto-pipeline open a new connection on the next command, so
a loop that catches the error, waits and tries again resumes by itself once
Redis answers; this module decides how long to wait and what to say. The wait
doubles from ``first_s`` up to ``longest_s``, so a long outage costs a few
attempts a minute and a short restart is noticed within ``longest_s``.
"""

from __future__ import annotations

import logging
import time


class Outage:
    """The state of one loop's connection to Redis."""

    def __init__(
        self, log: logging.Logger, who: str, *, first_s: float = 0.2, longest_s: float = 5.0
    ) -> None:
        self.log = log
        self.who = who
        self.first_s = first_s
        self.longest_s = longest_s
        self.since: float | None = None
        self._next_wait_s = first_s

    @property
    def down(self) -> bool:
        return self.since is not None

    def failed(self, error: BaseException) -> float:
        """Note a failed attempt; how long to wait before the next one."""
        if self.since is None:
            self.since = time.monotonic()
            self.log.warning(
                "%s: Redis unreachable (%s); retrying every %.1f to %.0f s",
                self.who,
                error,
                self.first_s,
                self.longest_s,
            )
        wait = self._next_wait_s
        self._next_wait_s = min(wait * 2, self.longest_s)
        return wait

    def recovered(self) -> None:
        """Note a successful attempt (cheap when there was no outage)."""
        if self.since is None:
            return
        elapsed = time.monotonic() - self.since
        self.log.info("%s: Redis reachable again after %.1f s", self.who, elapsed)
        self.since = None
        self._next_wait_s = self.first_s
