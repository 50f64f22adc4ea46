"""The metrics history collector in a dashboard server process.

``dashboard.asgi`` calls ``start`` once when a server loads the app (daphne,
uvicorn, ``manage.py demo``, ``runserver``): the process offers to collect
(queues.collector elects one among all the processes sharing the Redis) in a
daemon thread, on its own Redis client, and stops at exit, handing its lease
back so another process takes over at once rather than when the lease
lapses. Off with ``ECHOMQ_HISTORY_COLLECTOR = False`` (the test suite sets it
off: a test that wants a collector starts one).

With several Redis connections (``ECHOMQ_CONNECTIONS``) a process offers one
collector per connection: each server keeps its own queues' history, lease
and status, so a server the dashboard cannot reach stops only its own
history (its collector keeps trying, queues.collector) and each election is
among the processes that serve that server.
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
    """Start this process's collectors, one per connection (once); none when
    the setting turns them off."""
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
