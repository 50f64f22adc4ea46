"""extendLock-2 against a real Redis."""

from __future__ import annotations

from redis import Redis

from queues import scripts
from queues.commands import transitions as t
from queues.keys import QueueKeys
from tests.transition_helpers import TOKEN


def _extend(client: Redis, keys: QueueKeys, token: str, duration_ms: int = 60_000) -> object:
    call = t.extend_lock(keys, "1", token=token, lock_duration_ms=duration_ms)
    return scripts.run(client, call)


def test_the_holder_renews_its_lock_and_leaves_the_stalled_set(
    redis_client: Redis, keys: QueueKeys
) -> None:
    redis_client.set(keys.lock("1"), TOKEN, px=1000)
    redis_client.sadd(keys.stalled, "1", "2")
    assert _extend(redis_client, keys, TOKEN) == 1
    assert 59_000 < redis_client.pttl(keys.lock("1")) <= 60_000
    assert redis_client.get(keys.lock("1")) == TOKEN.encode()
    assert redis_client.smembers(keys.stalled) == {b"2"}


def test_another_token_cannot_renew(redis_client: Redis, keys: QueueKeys) -> None:
    redis_client.set(keys.lock("1"), "other", px=1000)
    redis_client.sadd(keys.stalled, "1")
    assert _extend(redis_client, keys, TOKEN) == 0
    assert redis_client.pttl(keys.lock("1")) <= 1000
    assert redis_client.get(keys.lock("1")) == b"other"
    assert redis_client.sismember(keys.stalled, "1") == 1


def test_a_lost_lock_is_not_recreated(redis_client: Redis, keys: QueueKeys) -> None:
    redis_client.sadd(keys.stalled, "1")
    assert _extend(redis_client, keys, TOKEN) == 0
    assert redis_client.exists(keys.lock("1")) == 0
    assert redis_client.sismember(keys.stalled, "1") == 1
