from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator

import pytest
from redis import Redis
from redis.asyncio import Redis as AsyncRedis

from queues.connection import connect_async
from queues.events import Event, QueueEvents
from queues.keys import QueueKeys

KEYS = QueueKeys("mail")


@pytest.fixture
async def aclient(redis_url: str, redis_client: Redis) -> AsyncIterator[AsyncRedis]:
    client = connect_async(redis_url)
    yield client
    await client.aclose()


def _emit(client: Redis, event: str, job_id: str, **fields: str) -> str:
    entry = client.xadd(KEYS.events, {"event": event, "jobId": job_id, **fields})
    return entry.decode() if isinstance(entry, bytes) else str(entry)


async def _take(events: QueueEvents, count: int) -> list[Event]:
    taken: list[Event] = []
    async for event in events:
        taken.append(event)
        if len(taken) == count:
            break
    return taken


async def test_from_the_start_yields_existing_events_in_order(
    redis_client: Redis, aclient: AsyncRedis
) -> None:
    _emit(redis_client, "added", "1", name="welcome")
    _emit(redis_client, "waiting", "1")
    _emit(redis_client, "completed", "1", returnvalue='{"ok":true}', prev="active")
    events = QueueEvents("mail", client=aclient, last_id="0", block_ms=200)
    got = await asyncio.wait_for(_take(events, 3), 5)
    assert [e.event for e in got] == ["added", "waiting", "completed"]
    assert {e.job_id for e in got} == {"1"}
    assert got[0].fields == {"name": "welcome"}
    assert got[2].fields == {"returnvalue": '{"ok":true}', "prev": "active"}
    await events.close()


async def test_dollar_skips_history_but_misses_nothing_after_the_first_read(
    redis_client: Redis, aclient: AsyncRedis
) -> None:
    _emit(redis_client, "added", "old")
    events = QueueEvents("mail", client=aclient, block_ms=100)
    reader = asyncio.create_task(_take(events, 3))
    await asyncio.sleep(0.15)  # the reader has pinned "$" and is blocked (or between reads)
    for job_id in ("a", "b", "c"):
        _emit(redis_client, "added", job_id)
    got = await asyncio.wait_for(reader, 5)
    assert [e.job_id for e in got] == ["a", "b", "c"]
    await events.close()


async def test_resuming_from_last_id_continues_exactly_after_it(
    redis_client: Redis, aclient: AsyncRedis
) -> None:
    ids = [_emit(redis_client, "progress", str(n), data=str(n)) for n in range(5)]
    first = QueueEvents("mail", client=aclient, last_id="0", block_ms=100)
    assert [e.job_id for e in await _take(first, 2)] == ["0", "1"]
    await first.close()
    assert first.last_id == ids[1]
    resumed = QueueEvents("mail", client=aclient, last_id=first.last_id, block_ms=100)
    assert [e.job_id for e in await asyncio.wait_for(_take(resumed, 3), 5)] == ["2", "3", "4"]
    assert resumed.last_id == ids[4]
    await resumed.close()


async def test_close_ends_a_blocked_read_promptly_and_the_client_stays_usable(
    aclient: AsyncRedis,
) -> None:
    events = QueueEvents("mail", client=aclient, block_ms=30_000)
    reader = asyncio.create_task(_take(events, 1))
    await asyncio.sleep(0.1)
    started = time.monotonic()
    await events.close()
    assert await asyncio.wait_for(reader, 2) == []
    assert time.monotonic() - started < 1
    assert await aclient.ping()


async def test_a_blocked_read_may_outlast_redis_pys_default_read_timeout(
    redis_client: Redis, aclient: AsyncRedis
) -> None:
    """redis-py 8 reads with a 5 s timeout unless told otherwise: a quiet queue's
    XREAD BLOCK past it must wait, not fail (queues.connection)."""
    events = QueueEvents("mail", client=aclient, block_ms=8_000)
    reader = asyncio.create_task(_take(events, 1))
    await asyncio.sleep(6)
    assert not reader.done(), reader
    _emit(redis_client, "added", "late")
    got = await asyncio.wait_for(reader, 5)
    assert [e.job_id for e in got] == ["late"]
    await events.close()


async def test_an_empty_stream_with_dollar_starts_from_the_first_event(
    redis_client: Redis, aclient: AsyncRedis
) -> None:
    events = QueueEvents("mail", client=aclient, block_ms=100)
    reader = asyncio.create_task(_take(events, 1))
    await asyncio.sleep(0.05)
    _emit(redis_client, "added", "first")
    (event,) = await asyncio.wait_for(reader, 5)
    assert event.job_id == "first"
    assert event.timestamp_ms > 0
