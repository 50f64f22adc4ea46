from __future__ import annotations

import asyncio
import threading
import time

from redis import Redis

from queues.demo import DEMO_QUEUES, run_demo
from queues.queue import Queue


async def test_the_demo_produces_and_processes_traffic_on_every_queue(
    redis_url: str, redis_client: Redis
) -> None:
    stop = asyncio.Event()
    asyncio.get_running_loop().call_later(3.0, stop.set)
    await asyncio.wait_for(run_demo(redis_url, stop=stop, print_every_s=60, seed=3), 20)
    queues = {spec.name: Queue(spec.name, redis_client) for spec in DEMO_QUEUES}
    counts = {name: queue.get_counts() for name, queue in queues.items()}
    assert counts["emails"]["completed"] > 5
    assert counts["payments"]["completed"] > 0
    # nothing is left active: the close was graceful
    assert all(c["active"] == 0 for c in counts.values())
    events = [
        fields[b"event"] for _id, fields in redis_client.xrange(queues["thumbnails"].keys.events)
    ]
    assert b"progress" in events
    done = queues["thumbnails"].get_jobs("completed")
    assert done
    assert done[0].progress == 100
    assert queues["thumbnails"].get_logs(done[0].id)[1] >= 2


def test_the_demo_runs_in_a_thread_and_stops_on_a_threading_event(
    redis_url: str, redis_client: Redis
) -> None:
    stop = threading.Event()
    thread = threading.Thread(
        target=lambda: asyncio.run(run_demo(redis_url, stop=stop, print_every_s=60, seed=1))
    )
    thread.start()
    deadline = time.monotonic() + 10
    emails = Queue("emails", redis_client)
    while emails.get_counts("completed")["completed"] == 0 and time.monotonic() < deadline:
        time.sleep(0.1)
    stop.set()
    thread.join(15)
    assert not thread.is_alive()
    assert emails.get_counts("completed")["completed"] > 0
