"""A search step's two bounds (issue 26): it stops as soon as it holds enough
matches for a page, and it looks into a field of exactly the size it allows
(only a larger one is counted unchecked). Real Redis, jobs added by our
runtime as a checkout service would."""

from __future__ import annotations

import time
from types import SimpleNamespace
from typing import Any

import pytest
from redis import Redis

from queues.queue import Queue
from queues.read import search
from queues.read.refs import QueueRef
from queues.read.search import (
    MAX_FIELD_BYTES,
    MAX_PATH_DEPTH,
    MAX_QUERY_LENGTH,
    Cursor,
    Pacing,
    QueryError,
    SearchStep,
    parse_query,
    search_all,
    search_step,
)
from queues.read.states import TAB

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
    assert not first.done
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
    assert rest.done
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


def _declined(queue: Queue, count: int) -> list[str]:
    ids = queue.add_bulk(
        [("capture-payment", {"order": f"ord_{n:06d}"}, None) for n in range(count)]
    )
    for job_id in ids:
        queue.fail(job_id, "CardError: Your card was declined")
    return ids


def _declined_step(client: Redis, **options: Any) -> SearchStep:
    """One step of the search for declined cards, from the newest, in slices of 10 first."""
    query = parse_query("reason ~ declined")
    return search_step(client, REF, "failed", query, Cursor(batch=10), **options)


def test_a_step_stops_at_exactly_its_page_of_matches(redis_client: Redis, queue: Queue) -> None:
    """Fast calls double the slice (10, 20, ...): the second slice brings the
    30th match and the step ends there, not one slice later."""
    _declined(queue, 200)
    fast = Pacing(target_call_ms=1e6, sleep=lambda _: None)  # every call is faster than that
    step = _declined_step(redis_client, budget_ms=60_000, max_hits=30, pacing=fast)
    assert len(step.hits) == 30
    assert step.cursor is not None
    assert step.cursor.batch == 40  # and the next slice is twice the last


def test_a_step_reports_its_redis_time_as_measured(redis_client: Redis, queue: Queue) -> None:
    _declined(queue, 50)
    step = _declined_step(redis_client, pacing=NO_REST)
    assert step.calls >= 2
    # Each call is a round trip to Redis: more than 10 us, far less than a minute.
    assert 0.01 <= step.longest_call_ms <= step.busy_ms < 60_000


def test_a_step_ends_when_its_time_budget_is_spent(redis_client: Redis, queue: Queue) -> None:
    """With 5 ms of rest after each slice of 10, a 30 ms budget ends the step
    after a few slices, far from the 2,000 jobs' end."""
    _declined(queue, 2000)
    resting = Pacing(target_call_ms=0.001, sleep=lambda _: time.sleep(0.005))
    step = _declined_step(redis_client, budget_ms=30, max_hits=5000, pacing=resting)
    assert step.cursor is not None
    assert 10 <= step.searched <= 500


def test_a_path_may_be_sixteen_keys_deep_not_seventeen() -> None:
    deep = ".".join(f"l{n}" for n in range(MAX_PATH_DEPTH))
    assert len(parse_query(f"data.{deep} = 1").path) == MAX_PATH_DEPTH
    with pytest.raises(QueryError, match="at most"):
        parse_query(f"data.{deep}.l16 = 1")


def test_two_quotes_search_for_the_empty_text(redis_client: Redis, queue: Queue) -> None:
    """A job added without a name (some producers do) is found by name = ""."""
    unnamed = queue.add("", {"order": "ord_000042"})
    queue.add("capture-payment", {"order": "ord_000043"})
    assert parse_query('name = ""').value == ""
    steps = search_all(redis_client, REF, "wait", parse_query('name = ""'), pacing=NO_REST)
    assert [hit for step in steps for hit in step.hits] == [unnamed]


def test_a_cursor_naming_a_key_the_tab_does_not_have_is_refused() -> None:
    with pytest.raises(QueryError, match="not valid"):
        Cursor.decode("1||0|200|", TAB["failed"])  # failed has one key, index 0
    assert Cursor.decode("1||0|200|", TAB["wait"]).key == 1  # wait has two: wait, paused


def test_a_query_is_written_back_as_typed() -> None:
    assert parse_query("reason ~ timeout").text == "reason ~ timeout"
    assert parse_query("data.flags.tier = gold").text == 'data.flags.tier = "gold"'


def test_text_with_accents_and_quotes_is_found_as_node_writes_it(
    redis_client: Redis, queue: Queue
) -> None:
    """Node's JSON keeps non-ASCII characters as they are and escapes quotes:
    the venue below is stored as Le café \\"Procope\\", Paris 6e and found
    as typed."""
    queue.add("book-table", {"venue": "plain"})
    redis_client.hset(
        REF.keys.job("node-1"),
        mapping={
            "name": "book-table",
            "data": '{"venue":"Le café \\"Procope\\", Paris 6e"}',
            "opts": "{}",
        },
    )
    redis_client.lpush(REF.keys.wait, "node-1")
    steps = search_all(
        redis_client, REF, "wait", parse_query('data ~ café "Procope"'), pacing=NO_REST
    )
    assert [hit for step in steps for hit in step.hits] == ["node-1"]


def test_a_path_compares_with_a_decimal_number() -> None:
    assert parse_query("data.amount = 19.99").value == 19.99
    with pytest.raises(QueryError, match="too large"):
        parse_query("data.amount = 1e999")


def test_odd_but_valid_search_texts_are_taken_as_typed() -> None:
    assert parse_query('reason ~ "').value == '"'  # a lone quote: the character itself
    assert parse_query('data ~ screen 12"').value == 'screen 12"'  # 12 inches
    # As long as a query may be, and nested past what the JSON parser takes
    # (the stack a request already holds counts too).
    with pytest.raises(QueryError, match="nested too deeply"):
        parse_query("data.items = " + "[" * (MAX_QUERY_LENGTH - len("data.items = ")))


def test_an_id_search_looks_at_one_job_or_none(redis_client: Redis, queue: Queue) -> None:
    job_id = queue.add("capture-payment", {"order": "ord_000007"})
    found = search_step(redis_client, REF, "wait", parse_query(f"id = {job_id}"))
    assert (found.hits, found.searched, found.total, found.done) == ([job_id], 1, 1, True)
    invalid = search_step(redis_client, REF, "wait", parse_query("id = ord:7"))
    assert (invalid.hits, invalid.searched, invalid.total) == ([], 0, 1)


def test_the_slice_size_rule_at_its_edges() -> None:
    pacing = Pacing(target_call_ms=1.0)
    assert pacing.next_batch(400, 0.5) == 800  # twice as fast as the target: double
    assert pacing.next_batch(400, 0.0) == 800  # a call too short for the clock: double
    assert pacing.next_batch(400, 4.0) == 200


def test_a_rest_is_the_call_time_scaled_to_the_duty() -> None:
    rests: list[float] = []
    Pacing(duty=0.5, sleep=rests.append).rest(4.0)  # half the time busy: rest as long
    Pacing(duty=0.8, sleep=rests.append).rest(4.0)
    assert rests == [pytest.approx(0.004), pytest.approx(0.001)]


def test_call_times_are_measured_in_milliseconds(
    redis_client: Redis, queue: Queue, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Each call read on a clock that moves exactly 1 ms between two reads."""
    _declined(queue, 30)
    ticks = iter(range(10**6))
    clock = SimpleNamespace(perf_counter=lambda: next(ticks) / 1000, monotonic=time.monotonic)
    monkeypatch.setattr(search, "time", clock)
    step = _declined_step(redis_client, pacing=NO_REST)
    assert step.calls == 3
    assert step.longest_call_ms == pytest.approx(1.0)
    assert step.busy_ms == pytest.approx(3.0)


@pytest.mark.parametrize(("budget_ms", "slices"), [(20.0, 2), (10.005, 2), (9.5, 1)])
def test_the_budget_is_wall_time_in_milliseconds(
    redis_client: Redis,
    queue: Queue,
    monkeypatch: pytest.MonkeyPatch,
    budget_ms: float,
    slices: int,
) -> None:
    """On a clock that moves exactly 10 ms between two readings, the step
    ends at the first slice whose end reads at or past its budget."""
    _declined(queue, 100)
    readings = iter(range(10**6))
    clock = SimpleNamespace(perf_counter=time.perf_counter, monotonic=lambda: next(readings) / 100)
    monkeypatch.setattr(search, "time", clock)
    step = _declined_step(redis_client, budget_ms=budget_ms, max_hits=1000, pacing=NO_REST)
    assert step.calls == slices


def test_a_search_goes_on_after_its_anchor_even_when_the_anchor_failed_again(
    redis_client: Redis, queue: Queue
) -> None:
    """The cursor holds the last job looked at and its score. That job is
    retried and fails again meanwhile (a newer score, now the newest): the
    next step goes on after the old score, looking at nothing twice."""
    ids = queue.add_bulk([("capture-payment", {"order": f"ord_{n:06d}"}, None) for n in range(60)])
    for job_id in ids:  # one failure per millisecond: no two share a score
        queue.fail(job_id, "CardError: Your card was declined")
        time.sleep(0.0015)
    query = parse_query("reason ~ declined")
    slow = Pacing(target_call_ms=1e-9, sleep=lambda _: None)  # slices stay at 10
    first = search_step(
        redis_client, REF, "failed", query, Cursor(batch=10), budget_ms=0, pacing=slow
    )
    assert first.cursor is not None
    anchor = first.cursor.anchor
    assert first.hits[-1] == anchor
    queue.retry(anchor)
    time.sleep(0.002)  # a later finishedOn: the anchor's score changes
    queue.fail(anchor, "CardError: Your card was declined")
    rest: list[str] = []
    cursor: Cursor | None = first.cursor
    while cursor is not None:
        step = search_step(redis_client, REF, "failed", query, cursor, pacing=slow)
        rest.extend(step.hits)
        cursor = step.cursor
    assert not set(first.hits) & set(rest)
    assert sorted(first.hits + rest, key=int) == sorted(ids, key=int)
