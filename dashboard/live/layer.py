"""The channel layer: Redis pub/sub on the same Redis as the queues.

Pub/sub fits the fan-out: one PUBLISH per event batch reaches each server
process once, and the process hands it to its local consumers. The URL is
resolved when the layer is first used, not when settings are imported, so
``manage.py migrate`` never starts a private Redis. A ``?cluster=1`` URL is
used as a plain connection to that node: pub/sub messages reach every node of
a cluster.
"""

from __future__ import annotations

from typing import Any

from channels_redis.pubsub import RedisPubSubChannelLayer

from dashboard.redis import redis_url
from queues.connection import NO_READ_TIMEOUT, split_cluster_flag


class QueueRedisChannelLayer(RedisPubSubChannelLayer):  # type: ignore[misc]
    def __init__(self, hosts: list[Any] | None = None, **options: Any) -> None:
        # No read timeout (queues.connection.NO_READ_TIMEOUT says why): with
        # redis-py's 5 s default a socket's consumer cancelled while it joins
        # a group could go on for ever (Python 3.11's wait_for).
        address = split_cluster_flag(redis_url())[0]
        super().__init__(hosts=hosts or [{"address": address, **NO_READ_TIMEOUT}], **options)
        self._last_decoded: tuple[bytes, Any] | None = None

    def deserialize(self, message: bytes) -> Any:
        """One decode per published message, not one per consumer.

        A group message reaches this process once, and the layer hands that one
        bytes object to every consumer in the group, each of which decoded it.
        Consumers now share the decoded message, so they must treat it as
        read-only (LiveConsumer does).

        Measured with ``bench/live.py --sockets-only`` (20 WebSocket clients on
        one queue; daphne's CPU over the run) on the 2-CPU VM on 2026-12-01,
        with and without this method (one decode per consumer, as
        channels-redis does) run alternately: at 1,000 events/s, where each
        message carries a larger batch, daphne took 27-36% of a core without
        it against 23-26% with it (3 rounds, load average 2.3-2.9); at 200
        events/s the difference stayed within the runs' spread (-3 to +3
        points in 5 rounds).
        """
        last = self._last_decoded
        if last is not None and last[0] is message:
            return last[1]
        decoded = super().deserialize(message)
        self._last_decoded = (message, decoded)
        return decoded
