"""The metrics history collector in a dashboard server process.

``dashboard.asgi`` calls ``start`` once when a server loads the app (daphne,
uvicorn, ``manage.py demo``, ``runserver``): the process offers to collect
(queues.collector elects one among all the processes sharing the Redis) in a
daemon thread, on its own Redis client, and stops at exit, handing its lease
back so another process takes over at once rather than when the lease
lapses. Off with ``ECHOMQ_HISTORY_COLLECTOR = False`` (the test suite sets it
off: a test that wants a collector starts one).
"""

from __future__ import annotations

import atexit
import threading

from dashboard import conf
from dashboard.lookup import all_queues
from dashboard.redis import get_client, redis_url
from queues.collector import HistoryCollector
from queues.connection import connect
from queues.read.refs import QueueRef

_lock = threading.Lock()
_running: list[HistoryCollector] = []


def start() -> HistoryCollector | None:
    """Start this process's collector (once); None when the setting turns it off."""
    if not conf.history_collector():
        return None
    with _lock:
        if _running:
            return _running[0]

        def queues() -> list[QueueRef]:
            # Discovery shares the dashboard's client; the collector's own
            # client keeps its reads out of the pages' connection pool.
            return all_queues(get_client())

        collector = HistoryCollector(connect(redis_url()), queues)
        collector.start()
        atexit.register(collector.stop)
        _running.append(collector)
        return collector
