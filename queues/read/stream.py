"""A queue's events stream as the live updates read it (asyncio client):
where it ends, whether a position in it was trimmed away, and what came
after a position.

A position is a stream id ``"<ms>-<seq>"``. What came after one is either
the events (at most a limit) or a gap: entries after it may be gone
(trimmed by MAXLEN, or the stream deleted) or more were missed than the
limit, and the page must reload what it shows instead of trusting a feed
with a hole in it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from redis.asyncio import Redis as AsyncRedis

from queues import codec
from queues.events import Event
from queues.numerals import UNSIGNED_64, NotWholeNumber, parse_whole

ZERO_ID = "0-0"
# Both halves of a stream id are unsigned 64-bit numbers: Redis refuses a bigger one.
NEWEST_POSSIBLE = (UNSIGNED_64, UNSIGNED_64)


def parse_stream_id(value: object) -> tuple[int, int] | None:
    """``"1700000000000-3"`` (or ``"1700000000000"``) -> (1700000000000, 3);
    anything else (a number past 64 bits too, which Redis would refuse) -> None."""
    if not isinstance(value, str):
        return None
    ms, dash, seq = value.partition("-")
    try:
        return parse_whole(ms, UNSIGNED_64), parse_whole(seq, UNSIGNED_64) if dash else 0
    except NotWholeNumber:
        return None


@dataclass(frozen=True, slots=True)
class Missed:
    """What came after a position: the events, or a gap (reload instead)."""

    events: list[Event]
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


async def missed_after(client: AsyncRedis, key: str, after: str, limit: int) -> Missed:
    """The events after ``after`` (exclusive), at most ``limit`` of them."""
    position = parse_stream_id(after) or (0, 0)
    if position == NEWEST_POSSIBLE:
        return Missed([], False, after)  # nothing can follow it (and Redis refuses "(" + it)
    async with client.pipeline(transaction=False) as pipe:
        pipe.xrange(key, count=1)
        pipe.xrange(key, min=f"({position[0]}-{position[1]}", count=limit + 1)
        first, missed = await pipe.execute()
    if _trimmed(position, first) or len(missed) > limit:
        return Missed([], True, await newest_id(client, key))
    events = [Event.from_entry(stream_id, raw) for stream_id, raw in missed]
    tip = events[-1].stream_id if events else f"{position[0]}-{position[1]}"
    return Missed(events, False, tip)
