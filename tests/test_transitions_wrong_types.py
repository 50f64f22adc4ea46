"""The worker's transitions refuse a queue key of the wrong type before their
first write (issue 10's guarantee, kept by issue 24's cheaper checks).

moveToActive and moveToFinished no longer probe every key they may touch:
each key is proven by a read the call makes anyway (meta by its HMGET, wait
by the read of its tail, delayed by the due read, marker by moveToActive's
wake-up check (a finish never writes it), stalled by the job's mark), by the
first write itself (active), or by a probe when nothing else reads it
(events, the finished set, metrics).
Whichever way, a key of the wrong type refuses the whole call, naming the
key, and every key stays byte for byte as it was.
"""

from __future__ import annotations

from collections.abc import Callable

import pytest
from redis import Redis

from queues import scripts
from queues.commands import transitions as t
from queues.errors import CorruptKey
from queues.keys import QueueKeys
from tests.keyspace import snapshot
from tests.transition_helpers import NOW, TOKEN, fetch, finish_options, seed_job
from tests.transition_helpers import finish as finish_job

Breaker = Callable[[Redis, str], object]


def _a_set(client: Redis, key: str) -> None:
    client.delete(key)
    client.sadd(key, "x")


def _a_string(client: Redis, key: str) -> None:
    client.delete(key)
    client.set(key, "twelve")  # no hash, list, zset or stream; no counter either


def _a_hash(client: Redis, key: str) -> None:
    client.delete(key)
    client.hset(key, "x", "1")


# What each structure is turned into: a type its commands refuse.
BREAKERS: dict[str, Breaker] = {
    "wait": _a_set,
    "active": _a_string,
    "prioritized": _a_hash,
    "events": _a_set,
    "stalled": _a_string,
    "delayed": _a_string,
    "meta": _a_set,
    "marker": _a_hash,
    "limiter": _a_string,
    "completed": _a_string,
    "metrics:completed": _a_string,
    "metrics:completed:data": _a_hash,
    "pc": _a_string,
}


def _finishing(client: Redis, keys: QueueKeys, *, waiting: int = 2) -> None:
    """Job 1 active and locked, ``waiting`` jobs behind it in wait."""
    seed_job(client, keys, "1", state="active", lock_token=TOKEN)
    for index in range(waiting):
        seed_job(client, keys, str(index + 2))


def _finish(client: Redis, keys: QueueKeys, **options: object) -> object:
    return finish_job(
        client, keys, "1", fetch_next=True, options=finish_options(**options), now_ms=NOW
    )


@pytest.mark.parametrize(
    ("structure", "waiting", "options"),
    [
        ("wait", 2, {}),
        ("active", 2, {}),
        ("events", 2, {}),
        ("stalled", 2, {}),
        ("delayed", 2, {}),
        ("meta", 2, {}),
        ("prioritized", 1, {}),  # read when wait holds fewer than two jobs
        ("limiter", 2, {"limiter": t.RateLimit(max=10, duration_ms=1000)}),
        ("completed", 2, {"keep": t.KeepJobs.keep_all()}),
        ("metrics:completed", 2, {"max_metrics_size": 10}),
        ("metrics:completed:data", 2, {"max_metrics_size": 10}),
    ],
)
def test_a_finish_taking_the_next_job_refuses_a_key_of_the_wrong_type_naming_it(
    redis_client: Redis, keys: QueueKeys, structure: str, waiting: int, options: dict[str, object]
) -> None:
    _finishing(redis_client, keys, waiting=waiting)
    key = keys.base + structure
    BREAKERS[structure](redis_client, key)
    before = snapshot(redis_client)
    with pytest.raises(CorruptKey) as refused:
        _finish(redis_client, keys, **options)
    assert refused.value.key == key
    assert snapshot(redis_client) == before


def test_a_finish_taking_the_next_job_leaves_the_wake_up_marker_as_it_was(
    redis_client: Redis, keys: QueueKeys
) -> None:
    """A finish consumed no marker (a pick-up restores the one that woke its
    worker), so it neither reads nor writes one, even with jobs still ready
    behind the one it takes: one ZSCORE less per job."""
    _finishing(redis_client, keys, waiting=2)
    redis_client.delete(keys.marker)
    fetched = _finish(redis_client, keys)
    assert fetched[1] == b"2"  # the next job, taken
    assert redis_client.exists(keys.marker) == 0
    assert redis_client.llen(keys.wait) == 1


@pytest.mark.parametrize("structure", ["wait", "prioritized", "events", "stalled"])
def test_a_finish_without_the_next_job_refuses_a_key_of_the_wrong_type(
    redis_client: Redis, keys: QueueKeys, structure: str
) -> None:
    """Closing workers finish without taking more: the drained check reads
    wait and prioritized, so they are proven there too."""
    _finishing(redis_client, keys, waiting=0)
    key = keys.base + structure
    BREAKERS[structure](redis_client, key)
    before = snapshot(redis_client)
    with pytest.raises(CorruptKey):
        finish_job(redis_client, keys, "1", options=finish_options())
    assert snapshot(redis_client) == before


def test_the_general_path_probes_what_it_may_write(redis_client: Redis, keys: QueueKeys) -> None:
    """A due delayed job with a priority takes the general path, which pushes
    it into prioritized with the priority counter: a counter INCR cannot
    count on refuses the finish before it starts."""
    _finishing(redis_client, keys)
    seed_job(redis_client, keys, "due", state="delayed", due_ms=NOW - 5, priority=3)
    BREAKERS["pc"](redis_client, keys.pc)
    before = snapshot(redis_client)
    with pytest.raises(CorruptKey) as refused:
        _finish(redis_client, keys)
    assert refused.value.key == keys.pc
    assert snapshot(redis_client) == before


@pytest.mark.parametrize(
    ("structure", "waiting"),
    [
        ("wait", 2),
        ("active", 2),
        ("events", 2),
        ("delayed", 2),
        ("meta", 2),
        ("marker", 2),
        ("prioritized", 0),
        ("limiter", 2),
    ],
)
def test_a_pickup_refuses_a_key_of_the_wrong_type_naming_it(
    redis_client: Redis, keys: QueueKeys, structure: str, waiting: int
) -> None:
    for index in range(waiting):
        seed_job(redis_client, keys, str(index + 2))
    if structure == "prioritized":
        seed_job(redis_client, keys, "p", state="prioritized", priority=1)
    key = keys.base + structure
    BREAKERS[structure](redis_client, key)
    before = snapshot(redis_client)
    with pytest.raises(CorruptKey) as refused:
        fetch(redis_client, keys, limiter=t.RateLimit(max=10, duration_ms=1000))
    assert refused.value.key == key
    assert snapshot(redis_client) == before


def test_a_finish_refused_for_a_wrong_type_can_be_retried_once_repaired(
    redis_client: Redis, keys: QueueKeys
) -> None:
    _finishing(redis_client, keys)
    BREAKERS["events"](redis_client, keys.events)
    with pytest.raises(CorruptKey):
        _finish(redis_client, keys)
    redis_client.delete(keys.events)
    answer = scripts.run(
        redis_client,
        t.move_to_finished(
            keys,
            "1",
            token=TOKEN,
            now_ms=NOW,
            target="completed",
            value='"ok"',
            fetch_next=True,
            options=finish_options(),
        ),
    )
    assert answer[1] == b"2"


@pytest.mark.parametrize("source", ["wait", "prioritized"])
@pytest.mark.parametrize("structure", ["active", "events"])
def test_the_common_pickup_refuses_a_key_it_writes_before_it_moves_a_job(
    redis_client: Redis, keys: QueueKeys, source: str, structure: str
) -> None:
    """Without a rate limit a pick-up takes the straight-line path, whose
    first write, the move into active, is what proves active: it fails
    before it pops, and the call is refused naming the key, nothing moved."""
    if source == "wait":
        seed_job(redis_client, keys, "2")
    else:
        seed_job(redis_client, keys, "p", state="prioritized", priority=1)
    key = keys.base + structure
    BREAKERS[structure](redis_client, key)
    before = snapshot(redis_client)
    with pytest.raises(CorruptKey) as refused:
        fetch(redis_client, keys)
    assert refused.value.key == key
    assert snapshot(redis_client) == before
