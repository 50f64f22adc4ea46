from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import pytest
from redis import Redis
from redis.exceptions import ConnectionError as RedisConnectionError
from redis.exceptions import ResponseError

from queues.autopipe import AutoPipeline
from queues.commands.transitions import extend_lock
from queues.connection import connect, connect_async
from queues.keys import QueueKeys


@pytest.fixture
async def pipe(redis_url: str, redis_client: Redis) -> AsyncIterator[AutoPipeline]:
    client = connect_async(redis_url)
    pipeline = AutoPipeline.for_client(client)
    assert pipeline is not None
    yield pipeline
    await pipeline.close()
    await client.aclose()


async def test_commands_of_one_loop_turn_share_a_write_and_get_their_own_replies(
    pipe: AutoPipeline, redis_client: Redis
) -> None:
    await pipe.execute("PING")  # connect first, so the next writes can be counted
    writes = 0
    assert pipe._link is not None
    transport = pipe._link.transport
    assert transport is not None
    original = transport.write

    def counting_write(data: bytes | bytearray | memoryview) -> None:
        nonlocal writes
        writes += 1
        original(data)

    transport.write = counting_write  # type: ignore[method-assign]
    replies = await asyncio.gather(*(pipe.execute("INCRBY", "counter", n) for n in range(1, 201)))
    assert writes == 1
    assert replies == [n * (n + 1) // 2 for n in range(1, 201)]
    assert redis_client.get("counter") == b"20100"


async def test_error_replies_are_raised_for_their_caller_only(pipe: AutoPipeline) -> None:
    await pipe.execute("SET", "text", "abc")
    results = await asyncio.gather(
        pipe.execute("INCR", "text"), pipe.execute("GET", "text"), return_exceptions=True
    )
    assert isinstance(results[0], ResponseError)
    assert results[1] == b"abc"


async def test_a_script_missing_from_the_server_is_sent_in_full(
    pipe: AutoPipeline, redis_client: Redis
) -> None:
    redis_client.script_flush()
    keys = QueueKeys("q")
    redis_client.set(keys.lock("7"), "tok")
    call = extend_lock(keys, "7", token="tok", lock_duration_ms=5000)
    assert await pipe.run(call) == 1
    assert redis_client.script_exists(call.script.sha) == [True]
    assert 0 < (redis_client.pttl(keys.lock("7")) or 0) <= 5000


async def test_a_dropped_connection_fails_pending_calls_and_the_next_call_reconnects(
    pipe: AutoPipeline, redis_client: Redis
) -> None:
    await pipe.execute("CLIENT", "SETNAME", "autopipe-test")
    blocked = asyncio.ensure_future(pipe.execute("BLPOP", "never", 30))
    await asyncio.sleep(0.05)
    redis_client.client_kill_filter(_type="normal", skipme=True)
    with pytest.raises(RedisConnectionError):
        await asyncio.wait_for(blocked, 2)
    assert await pipe.execute("PING") == b"PONG"


async def test_the_database_of_the_url_is_selected(redis_url: str, redis_client: Redis) -> None:
    client = connect_async(redis_url.replace("db=0", "db=3"))
    pipeline = AutoPipeline.for_client(client)
    assert pipeline is not None
    await pipeline.execute("SET", "where", "db3")
    await pipeline.close()
    await client.aclose()
    assert redis_client.get("where") is None
    db3 = connect(redis_url.replace("db=0", "db=3"))
    assert db3.get("where") == b"db3"
    db3.close()


def test_cluster_and_tls_clients_get_no_pipeline() -> None:
    assert AutoPipeline.for_client(connect_async("rediss://127.0.0.1:6390/0")) is None
    assert AutoPipeline.for_client(connect_async("redis://127.0.0.1:6390/0?cluster=1")) is None
