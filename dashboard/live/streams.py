"""Events as the browser gets them, and the replay after a stream id that a
reconnecting page asks for (a gap when it cannot be replayed).
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from typing import TypedDict

from redis.asyncio import Redis as AsyncRedis

from dashboard.shared.presenters import EventRow, event_row, job_url_prefix
from queues.events import Event
from queues.read.refs import QueueRef
from queues.read.stream import missed_after


class EventPayload(TypedDict):
    """One event as sent: what the page picks events by, and what its row shows
    (presenters.event_row, the values the pages' own rows are rendered from;
    feed.js places them in the same markup). Values, not the row's HTML: every
    page of the queue gets every event, and the HTML made it 2.4 times longer
    and twice as long to put in (docs/live.md)."""

    id: str
    event: str
    job_id: str | None
    row: EventRow | None


@lru_cache(maxsize=4096)
def _job_prefix(address: str) -> str:
    """A queue's job URL without the id, reversed once per queue, not per event."""
    return job_url_prefix(QueueRef.from_address(address))


def payload(event: Event, address: str, *, row: bool = True) -> EventPayload:
    """``row=False`` when no page that gets it shows events: presenting is most
    of an event's cost on the server."""
    return {
        "id": event.stream_id,
        "event": event.event,
        "job_id": event.job_id,
        "row": event_row(event, _job_prefix(address)) if row else None,
    }


@dataclass(frozen=True, slots=True)
class Replay:
    """What a page missed after ``after``: the events, or a gap (reload instead)."""

    events: list[EventPayload]
    gap: bool
    tip: str  # the newest id in the stream now ("0-0" when empty): where to continue from


async def replay_after(
    client: AsyncRedis, address: str, key: str, after: str, limit: int
) -> Replay:
    """At most ``limit`` events after ``after``; a gap when some may be gone or
    more were missed (the page then reloads instead)."""
    missed = await missed_after(client, key, after, limit)
    return Replay([payload(event, address) for event in missed.events], missed.gap, missed.tip)
