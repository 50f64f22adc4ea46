"""The metrics history collector of a server process: one daemon thread per
Redis connection offers to collect (queues.collector elects one process per
Redis) and hands its lease back at exit. Off with ``ECHOMQ_HISTORY_COLLECTOR``.
"""

from __future__ import annotations

import atexit
import threading

from dashboard.core import conf, connections
from dashboard.core.lookup import all_queues
from dashboard.core.redis import get_client, redis_url, retry_once
from queues.collector import HistoryCollector
from queues.connection import connect
from queues.read.refs import QueueRef

_lock = threading.Lock()
_running: list[HistoryCollector] = []


def _collector(connection: str) -> HistoryCollector:
    def queues() -> list[QueueRef]:
        # Discovery shares the dashboard's client; the collector's own
        # client keeps its reads out of the pages' connection pool.
        return all_queues(get_client(connection), connection=connection)

    return HistoryCollector(connect(redis_url(connection), retry=retry_once()), queues)


def start() -> list[HistoryCollector]:
    """Start this process's collectors (once)."""
    if not conf.history_collector():
        return []
    with _lock:
        if not _running:
            for connection in connections.configured():
                collector = _collector(connection.name)
                collector.start()
                atexit.register(collector.stop)
                _running.append(collector)
        return list(_running)
