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
from queues.connection import split_cluster_flag


class QueueRedisChannelLayer(RedisPubSubChannelLayer):  # type: ignore[misc]
    def __init__(self, hosts: list[Any] | None = None, **options: Any) -> None:
        super().__init__(hosts=hosts or [split_cluster_flag(redis_url())[0]], **options)
        self._last_decoded: tuple[bytes, Any] | None = None

    def deserialize(self, message: bytes) -> Any:
        """One decode per published message, not one per consumer.

        A group message reaches this process once, and the layer hands that one
        bytes object to every consumer in the group, each of which decoded it:
        with 20 pages on a queue, 20 decodes of every batch, a seventh of the
        server's CPU. Consumers now share the decoded message, so they must
        treat it as read-only (LiveConsumer does).
        """
        last = self._last_decoded
        if last is not None and last[0] is message:
            return last[1]
        decoded = super().deserialize(message)
        self._last_decoded = (message, decoded)
        return decoded
