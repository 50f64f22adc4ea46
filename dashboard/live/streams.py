"""Stream ids and the replay a reconnecting page asks for.

A page names a queue as ``"<prefix>:<queue>"`` (``QueueRef.qualified``) and
its position in the events stream as a stream id ``"<ms>-<seq>"``. Replay
answers "everything after this id", or says that the id is gone (trimmed by
MAXLEN, or the stream deleted) so the page must reload what it shows instead of
trusting a feed with a hole in it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, TypedDict

from redis.asyncio import Redis as AsyncRedis

from dashboard.templatetags.dashboard_tags import event_detail, event_state
from queues import codec
from queues.events import Event

_STREAM_ID = re.compile(r"([0-9]{1,20})(?:-([0-9]{1,20}))?")  # ASCII digits: \d takes others
ZERO_ID = "0-0"
# Both halves of a stream id are unsigned 64-bit numbers: Redis refuses a bigger one.
_ID_PART_MAX = 2**64 - 1
NEWEST_POSSIBLE = (_ID_PART_MAX, _ID_PART_MAX)


class EventPayload(TypedDict):
    """One event as sent to the browser, with the state colour and detail the
    Events tab's server-rendered rows use (one source for both)."""

    id: str
    event: str
    job_id: str | None
    fields: dict[str, str]
    state: str
    detail: str


def parse_stream_id(value: object) -> tuple[int, int] | None:
    """``"1700000000000-3"`` -> (1700000000000, 3); anything else (a number past
    64 bits too, which Redis would refuse) -> None."""
    if not isinstance(value, str):
        return None
    match = _STREAM_ID.fullmatch(value)
    if match is None:
        return None
    parsed = int(match.group(1)), int(match.group(2) or 0)
    return parsed if max(parsed) <= _ID_PART_MAX else None


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


async def newest_id(client: AsyncRedis, key: str) -> str:
    newest = await client.xrevrange(key, count=1)
    return (codec.text(newest[0][0]) or ZERO_ID) if newest else ZERO_ID


def _trimmed(position: tuple[int, int], first: list[Any] | None) -> bool:
    """True when entries after ``position`` may be gone: its successor is not the first entry.

    ``position`` itself still being in the stream proves nothing after it was
    trimmed; "0-0" (the page saw an empty stream) has nothing to lose.
    """
    if position == (0, 0):
        return False
    first_id = parse_stream_id(codec.text(first[0][0])) if first else None
    return first_id is None or first_id > position


async def was_trimmed(client: AsyncRedis, key: str, after: str) -> bool:
    return _trimmed(parse_stream_id(after) or (0, 0), await client.xrange(key, count=1))


async def replay_after(client: AsyncRedis, key: str, after: str, limit: int) -> Replay:
    """The events after ``after`` (exclusive), at most ``limit`` of them.

    A gap is reported when entries after ``after`` may have been deleted or
    when more than ``limit`` events were missed: either way replaying would not
    rebuild the page, reloading its counts and lists does.
    """
    position = parse_stream_id(after) or (0, 0)
    if position == NEWEST_POSSIBLE:
        return Replay([], False, after)  # nothing can follow it (and Redis refuses "(" + it)
    async with client.pipeline(transaction=False) as pipe:
        pipe.xrange(key, count=1)
        pipe.xrange(key, min=f"({position[0]}-{position[1]}", count=limit + 1)
        first, missed = await pipe.execute()
    if _trimmed(position, first) or len(missed) > limit:
        return Replay([], True, await newest_id(client, key))
    events = [payload(Event.from_entry(stream_id, raw)) for stream_id, raw in missed]
    tip = events[-1]["id"] if events else f"{position[0]}-{position[1]}"
    return Replay(events, False, tip)
