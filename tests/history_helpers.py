"""Helpers for the metrics history tests: events written as BullMQ writes them,
at chosen times, and a collector stepped until it has read everything."""

from __future__ import annotations

import time

from redis import Redis

from queues.collector import HistoryCollector
from queues.connection import connect
from queues.keys import QueueKeys
from queues.read.refs import QueueRef


def event(client: Redis, ref: QueueRef, ms: int, name: str, job_id: str, **fields: str) -> str:
    """XADD one event with the stream id ``<ms>-*`` (Redis picks the sequence)."""
    flat: dict[str, str] = {"event": name, "jobId": job_id, **fields}
    stream_id = client.xadd(QueueKeys(ref.name, ref.prefix).events, flat, id=f"{ms}-*")  # type: ignore[arg-type]
    return stream_id.decode() if isinstance(stream_id, bytes) else str(stream_id)


Event = tuple[int, str, str, dict[str, str]]


def job_events(
    job_id: str, ready_ms: int, wait_ms: int, run_ms: int, *, ok: bool = True
) -> list[Event]:
    """The events of one job: ready at ``ready_ms``, active ``wait_ms`` later,
    finished ``run_ms`` after that."""
    end = ready_ms + wait_ms + run_ms
    finish: Event = (
        (end, "completed", job_id, {"returnvalue": "null", "prev": "active"})
        if ok
        else (end, "failed", job_id, {"failedReason": "boom", "prev": "active"})
    )
    return [
        (ready_ms, "waiting", job_id, {}),
        (ready_ms + wait_ms, "active", job_id, {"prev": "waiting"}),
        finish,
    ]


def write_events(client: Redis, ref: QueueRef, events: list[Event]) -> None:
    """XADD the events in time order (a stream only grows)."""
    for ms, name, job_id, fields in sorted(events, key=lambda e: e[0]):
        event(client, ref, ms, name, job_id, **fields)


def collect_until_read(collector: HistoryCollector, timeout: float = 20.0) -> None:
    """Step the collector (which must get the lease) until a pass reads
    nothing: it records then whatever it folded."""
    deadline = time.monotonic() + timeout
    while collector.step() or not collector.holding or collector.read_last_pass:
        if time.monotonic() > deadline:
            raise AssertionError(f"{collector.name} did not catch up (holding={collector.holding})")
        time.sleep(0.01)


def idle_collector(client: Redis, url: str, refs: list[QueueRef], base_ms: int) -> HistoryCollector:
    """A collector of ``refs``, each stream holding one job's events from
    ``base_ms`` on, that has read them all and passed once more (a stream read
    last pass is read again, unasked): its next pass finds every stream quiet."""
    for n, ref in enumerate(refs):
        write_events(client, ref, job_events(f"j{n}", base_ms + n, 5, 5))
    collector = HistoryCollector(connect(url), lambda: refs, name="idle", record_every_s=0.0)
    collect_until_read(collector)
    collector.collect_pass()
    return collector


def a_minute_ago_ms() -> int:
    # Taken when a test starts, not when this module is imported: the tests
    # read the last few minutes back, and a long parallel run starts some of
    # them more than that after the import.
    return int(time.time() * 1000) - 60_000
