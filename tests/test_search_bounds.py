"""A search step's two bounds (issue 26): it stops as soon as it holds enough
matches for a page, and it looks into a field of exactly the size it allows
(only a larger one is counted unchecked). Real Redis, jobs added by our
runtime as a checkout service would."""

from __future__ import annotations

import pytest
from redis import Redis

from queues.queue import Queue
from queues.read.refs import QueueRef
from queues.read.search import MAX_FIELD_BYTES, Cursor, Pacing, parse_query, search_all, search_step

REF = QueueRef("bull", "checkout")
NO_REST = Pacing(sleep=lambda _: None)


@pytest.fixture
def queue(redis_client: Redis) -> Queue:
    return Queue("checkout", redis_client)


def test_a_step_stops_once_it_holds_a_page_of_matches(redis_client: Redis, queue: Queue) -> None:
    """300 failed payments all match: with time to spare, a step of pages of
    25 stops after the slice that brought the 25th, and the next step goes on
    from there without losing or repeating one."""
    ids = queue.add_bulk(
        [
            ("capture-payment", {"order": f"ord_{n:06d}", "amount_cents": 1999 + n}, None)
            for n in range(300)
        ]
    )
    for job_id in ids:
        queue.fail(job_id, "CardError: Your card was declined (decline_code=insufficient_funds)")
    query = parse_query("reason ~ declined")
    first = search_step(
        redis_client,
        REF,
        "failed",
        query,
        Cursor(batch=10),
        budget_ms=60_000,
        max_hits=25,
        pacing=NO_REST,
    )
    assert 25 <= len(first.hits) < 40
    assert first.cursor is not None
    assert first.searched == len(first.hits)
    rest = search_step(
        redis_client,
        REF,
        "failed",
        query,
        first.cursor,
        budget_ms=60_000,
        max_hits=1_000,
        pacing=NO_REST,
    )
    assert rest.cursor is None
    assert sorted(first.hits + rest.hits, key=int) == sorted(ids, key=int)


def _data_of_exactly(redis_client: Redis, queue: Queue, size: int, needle: str) -> str:
    """A job whose stored data (the JSON text) is exactly ``size`` bytes."""
    probe = queue.add("export-report", {"csv": needle})
    overhead = redis_client.hstrlen(REF.keys.job(probe), "data") - len(needle)
    queue.remove(probe)
    job_id = queue.add("export-report", {"csv": needle + "x" * (size - overhead - len(needle))})
    assert redis_client.hstrlen(REF.keys.job(job_id), "data") == size
    return job_id


def test_a_field_of_exactly_the_limit_is_looked_into_and_one_byte_more_is_not(
    redis_client: Redis, queue: Queue
) -> None:
    at_limit = _data_of_exactly(redis_client, queue, MAX_FIELD_BYTES, "acct_1NvQ2kLz")
    over = _data_of_exactly(redis_client, queue, MAX_FIELD_BYTES + 1, "acct_1NvQ2kLz")
    steps = list(
        search_all(redis_client, REF, "wait", parse_query("data ~ acct_1NvQ2kLz"), pacing=NO_REST)
    )
    assert [hit for step in steps for hit in step.hits] == [at_limit]
    assert sum(step.unchecked for step in steps) == 1
    assert over not in steps[-1].hits
