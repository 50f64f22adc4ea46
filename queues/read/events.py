"""A queue's events stream, newest first, paged and filtered; a job's own events.

Filters are applied while reading batches backwards, at most ``scan_limit``
entries per call, so a rare event type never makes one request walk the whole
stream.
"""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass

from redis import Redis

from queues import codec
from queues.events import Event
from queues.keys import InvalidName, validate_job_id
from queues.read import answers
from queues.read.lists import MAX_PAGE_SIZE
from queues.read.refs import QueueRef
from queues.read.replies import read
from queues.read.stream import parse_stream_id


@dataclass(slots=True)
class EventPage:
    ref: QueueRef
    events: list[Event]
    next_before: str | None  # pass as ``before`` for the next (older) page
    newest_id: str | None  # the newest stream id that exists, for live resume

    def as_json(self) -> answers.EventPage:
        return answers.EventPage(
            queue=self.ref.qualified,
            events=[event_json(e) for e in self.events],
            next_before=self.next_before,
            newest_id=self.newest_id,
        )


def event_json(event: Event) -> answers.Event:
    return answers.Event(
        id=event.stream_id,
        event=event.event,
        job_id=event.job_id,
        timestamp=event.timestamp_ms,
        fields=event.fields,
    )


def events_page(
    client: Redis,
    ref: QueueRef,
    *,
    before: str | None = None,
    size: int = 50,
    event_type: str | None = None,
    job_id: str | None = None,
    skip_events: Collection[str] = (),
    scan_limit: int = 5_000,
) -> EventPage:
    """Events newest first, older than ``before`` (a stream id), optionally filtered
    to one event type, one job, or every event but those in ``skip_events``.

    Filters are applied while reading batches backwards, at most
    ``scan_limit`` entries per call, so a rare event type never makes one
    request walk the whole stream; ``next_before`` continues where it stopped.
    """
    keys = ref.keys
    size = max(1, min(size, MAX_PAGE_SIZE))
    if before is not None and parse_stream_id(before) is None:
        raise InvalidName(f"invalid stream id {before!r}")
    filtered = bool(event_type or job_id or skip_events)
    batch = size if not filtered else max(size * 4, 200)
    upper = "(" + before if before else "+"
    events: list[Event] = []
    scanned = 0
    cursor: str | None = None
    newest_raw = read(client.xrevrange, keys.events, "+", "-", count=1)
    newest_id = codec.text(newest_raw[0][0]) if newest_raw else None
    ended = False
    while len(events) < size and scanned < scan_limit:
        entries = read(client.xrevrange, keys.events, upper, "-", count=batch)
        consumed_all = True
        for index, (stream_id, raw) in enumerate(entries):
            scanned += 1
            event = Event.from_entry(stream_id, raw)
            cursor = event.stream_id
            if (
                (event_type and event.event != event_type)
                or (job_id and event.job_id != job_id)
                or event.event in skip_events
            ):
                continue
            events.append(event)
            if len(events) == size:
                consumed_all = index == len(entries) - 1
                break
        if len(entries) < batch and consumed_all:
            ended = True
            break
        upper = "(" + (cursor or "0")
    next_before = None if ended else cursor
    return EventPage(ref, events, next_before, newest_id)


def job_events(client: Redis, ref: QueueRef, job_id: str, *, size: int = 50) -> list[Event]:
    """This job's most recent events (from the latest few thousand), newest first."""
    validate_job_id(job_id)
    return events_page(client, ref, size=size, job_id=job_id, scan_limit=5_000).events
