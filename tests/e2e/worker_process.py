"""How the browser tests' worker scripts (cohort_worker.py, gateway_worker.py,
failover_worker.py) run, as a process of their own: until SIGTERM."""

from __future__ import annotations

import asyncio
import signal

from queues.worker import Worker


async def run_until_terminated(worker: Worker) -> None:
    """Run ``worker``; print "ready" once it runs (the test waits for it); on
    SIGTERM close it, giving the jobs in flight 5 s."""
    stop = asyncio.Event()
    asyncio.get_running_loop().add_signal_handler(signal.SIGTERM, stop.set)
    running = asyncio.create_task(worker.run())
    print("ready", flush=True)
    await stop.wait()
    await worker.close(timeout=5)
    await running
