"""Paging a state, the one implementation: a tab of several lists ("wait":
wait, then paused) reads as one list, by LRANGE's rules, for the pages and
``Queue.get_jobs`` alike, and a page inside the first list costs one round trip."""

from __future__ import annotations

from typing import Any

import pytest
from redis import Redis

from queues.queue import Queue
from queues.read.lists import state_window
from queues.read.refs import QueueRef
from tests.dashboard_seed import seed_job
from tests.round_trips import counted_sends

REF = QueueRef("bull", "paging")
KEYS = REF.keys


def _seed_ready(client: Redis, waiting: int, paused: int) -> list[str]:
    """Ids as the wait tab lists them: the wait list newest first, then paused."""
    for n in range(waiting):
        seed_job(client, KEYS, f"w{n}", state="wait")
    for n in range(paused):
        seed_job(client, KEYS, f"p{n}", state="paused")
    as_listed: list[Any] = client.lrange(KEYS.wait, 0, -1) + client.lrange(KEYS.paused, 0, -1)
    return [raw.decode() for raw in as_listed]


def _lrange_model(items: list[str], start: int, stop: int) -> list[str]:
    size = len(items)
    first = max(start + size if start < 0 else start, 0)
    last = stop + size if stop < 0 else stop
    return items[first : last + 1]


@pytest.mark.parametrize(
    ("start", "stop"),
    [(0, 2), (0, 4), (3, 7), (5, 9), (9, 20), (20, 30), (0, -1), (-3, -1), (-7, 4), (2, 1)],
)
def test_wait_and_paused_page_as_one_list(redis_client: Redis, start: int, stop: int) -> None:
    listed = _seed_ready(redis_client, waiting=5, paused=5)
    total, members = state_window(redis_client, KEYS, "wait", start, stop)
    assert total == 10
    assert [job_id for job_id, _ in members] == _lrange_model(listed, start, stop)
    jobs = Queue("paging", redis_client).get_jobs("wait", start, stop)
    assert [job.id for job in jobs] == _lrange_model(listed, start, stop)


def test_a_page_inside_the_wait_list_reads_its_ids_in_one_round_trip(
    redis_client: Redis, monkeypatch: pytest.MonkeyPatch
) -> None:
    _seed_ready(redis_client, waiting=5, paused=5)
    with counted_sends(monkeypatch) as sent:
        state_window(redis_client, KEYS, "wait", 0, 4)
    assert len(sent) == 1
    with counted_sends(monkeypatch) as sent:
        state_window(redis_client, KEYS, "wait", 3, 7)  # runs into paused: one more
    assert len(sent) == 2
