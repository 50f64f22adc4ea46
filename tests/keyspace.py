"""Looking at a whole keyspace: what is where, and whether anything changed.

Used by the tests that break keys on purpose (test_broken_keys, test_chaos,
test_out_of_memory): a refused script must leave every key byte for byte as
it was, and every job id must end in exactly one state or be reported.
"""

from __future__ import annotations

from collections import defaultdict
from typing import Any

from redis import Redis

from queues.keys import QueueKeys
from queues.read.states import KEY_STATES


def snapshot(client: Redis) -> dict[bytes, bytes]:
    """Every key and its DUMP (type, value and encoding, not the ttl)."""
    return {key: client.dump(key) or b"" for key in client.scan_iter(count=1000)}


def placement(client: Redis, keys: QueueKeys) -> dict[str, list[str]]:
    """Job id -> the states holding it (a list: an id may be in one twice),
    read from all eight state structures, whatever their type."""
    found: dict[str, list[str]] = defaultdict(list)
    raw: Any = client
    for state in KEY_STATES:
        key = keys.state(state.name)
        kind = raw.type(key)
        if state.is_list and kind == b"list":
            members = raw.lrange(key, 0, -1)
        elif kind == b"zset":
            members = raw.zrange(key, 0, -1)
        else:
            continue
        for member in members:
            # Any bytes another writer left: kept apart, not decoded away.
            job_id = member.decode(errors="surrogateescape")
            if not job_id.startswith("0:"):
                found[job_id].append(state.name)
    return dict(found)


def states_of(client: Redis, keys: QueueKeys, job_id: str) -> list[str]:
    return placement(client, keys).get(job_id, [])
