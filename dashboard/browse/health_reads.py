"""What the health rule (dashboard.shared.health) reads beyond a queue's counts:
its connected workers (for queues with jobs ready and not paused), from one client
list at most ``CLIENT_LIST_MAX_AGE_S`` old (its cost grows with the clients), one
showing no worker only ``ABSENCE_MAX_AGE_S`` old (a worker may just have
connected); for a queue without any, one more round trip: when its last job finished.
"""

from __future__ import annotations

from collections.abc import Sequence

from redis import Redis

from dashboard.shared.health import Workers, wants_workers
from queues.read.counts import QueueSummary, last_finished
from queues.read.refs import QueueRef
from queues.read.workers import ClientList, recent_client_list, workers_by_queue

ABSENCE_MAX_AGE_S = 1.0


def queue_workers(
    client: Redis, summaries: Sequence[QueueSummary]
) -> dict[QueueRef, Workers] | None:
    """The workers of the queues that want them (none read while no queue
    does); None when the server refuses ``CLIENT LIST``: then nothing is
    claimed about workers, and the health rule falls back to its
    five-minute rule (dashboard.shared.health.looks_stuck)."""
    wanted = [summary.ref for summary in summaries if wants_workers(summary)]
    if not wanted:
        return {}
    clients = recent_client_list(client)
    connected = _connected(clients, wanted)
    if connected is not None and not all(connected.values()):
        fresher = recent_client_list(client, ABSENCE_MAX_AGE_S)
        if fresher is not clients:
            connected = _connected(fresher, wanted)
    if connected is None:
        return None
    finished = last_finished(client, [ref for ref, count in connected.items() if not count])
    return {ref: Workers(count, finished.get(ref)) for ref, count in connected.items()}


def _connected(clients: ClientList, refs: list[QueueRef]) -> dict[QueueRef, int] | None:
    if not clients.known:
        return None
    return {ref: len(found) for ref, found in workers_by_queue(clients, refs).items()}
