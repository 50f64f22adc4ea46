"""Helpers shared by the Queue tests."""

from __future__ import annotations

from redis import Redis

from queues.queue import Queue


def stream_events(client: Redis, queue: Queue) -> list[dict[str, str]]:
    """Every entry of the queue's events stream, oldest first, as text."""
    return [
        {k.decode(): v.decode() for k, v in fields.items()}
        for _, fields in client.xrange(queue.keys.events)
    ]
