"""Events as the browser gets them, and the replay a reconnecting page asks for.

A page names a queue as ``"<prefix>:<queue>"`` (``QueueRef.qualified``) and
its position in the events stream as a stream id ``"<ms>-<seq>"``. Replay
answers "everything after this id", or says that the id is gone so the page
must reload; reading the stream is the read model's (``queues.read.stream``).
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from typing import TypedDict

from redis.asyncio import Redis as AsyncRedis

from dashboard.shared.presenters import event_row_html, job_url_prefix
from queues.events import Event
from queues.read.refs import QueueRef
from queues.read.stream import missed_after


class EventPayload(TypedDict):
    """One event as sent to the browser: its row as the Events tab renders it
    (presenters.event_row_html, the one rendering of an event), and what the
    page picks events by (its filter, the job it follows, where it is in the stream)."""

    id: str
    event: str
    job_id: str | None
    row: str


@lru_cache(maxsize=4096)
def _job_prefix(address: str) -> str:
    """A queue's job URL without the id, reversed once per queue, not per event."""
    return job_url_prefix(QueueRef.from_address(address))


def payload(event: Event, address: str, *, row: bool = True) -> EventPayload:
    """``event`` of the queue at ``address`` (``QueueRef.address``); ``row=False``:
    its row left empty, for when no page that gets it shows events (a count-only
    subscription): rendering is most of an event's cost on the server."""
    return {
        "id": event.stream_id,
        "event": event.event,
        "job_id": event.job_id,
        "row": event_row_html(event, _job_prefix(address)) if row else "",
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
    """The events of the queue at ``address`` after ``after`` (exclusive), at most
    ``limit`` of them.

    A gap is reported when entries after ``after`` may have been deleted or
    when more than ``limit`` events were missed: either way replaying would not
    rebuild the page, reloading its counts and lists does.
    """
    missed = await missed_after(client, key, after, limit)
    return Replay([payload(event, address) for event in missed.events], missed.gap, missed.tip)
