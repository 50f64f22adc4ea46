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
