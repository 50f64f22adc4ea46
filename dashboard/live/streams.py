"""Events as the browser gets them, and the replay a reconnecting page asks for.

A page names a queue as ``"<prefix>:<queue>"`` (``QueueRef.qualified``) and
its position in the events stream as a stream id ``"<ms>-<seq>"``. Replay
answers "everything after this id", or says that the id is gone so the page
must reload; reading the stream is the read model's (``queues.read.stream``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TypedDict

from redis.asyncio import Redis as AsyncRedis

from dashboard.templatetags.dashboard_tags import event_detail, event_state
from queues.events import Event
from queues.read.stream import missed_after


class EventPayload(TypedDict):
    """One event as sent to the browser, with the state colour and detail the
    Events tab's server-rendered rows use (one source for both)."""

    id: str
    event: str
    job_id: str | None
    fields: dict[str, str]
    state: str
    detail: str


def payload(event: Event) -> EventPayload:
    return {
        "id": event.stream_id,
        "event": event.event,
        "job_id": event.job_id,
        "fields": event.fields,
        "state": event_state(event.event),
        "detail": event_detail(event.fields),
    }


@dataclass(frozen=True, slots=True)
class Replay:
    """What a page missed after ``after``: the events, or a gap (reload instead)."""

    events: list[EventPayload]
    gap: bool
    tip: str  # the newest id in the stream now ("0-0" when empty): where to continue from


async def replay_after(client: AsyncRedis, key: str, after: str, limit: int) -> Replay:
    """The events after ``after`` (exclusive), at most ``limit`` of them.

    A gap is reported when entries after ``after`` may have been deleted or
    when more than ``limit`` events were missed: either way replaying would not
    rebuild the page, reloading its counts and lists does.
    """
    missed = await missed_after(client, key, after, limit)
    return Replay([payload(event) for event in missed.events], missed.gap, missed.tip)
