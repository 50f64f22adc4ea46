"""Corrupt keys never half-move a job (issue 10, point 1).

Lua does not roll back, so every script checks what it will touch before its
first write: a job whose keys are broken is left where it was and reported, a
queue key of the wrong type refuses the whole call, and in both cases every
key stays byte for byte as it was (``snapshot``).
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable
from typing import Any

import pytest
from redis import Redis

from queues import scripts
from queues.commands import admin
from queues.commands import transitions as t
from queues.errors import CorruptKey, JobBroken, ParentJobNotExist, SkippedJob
from queues.keys import QueueKeys
from queues.queue import BulkStopped, Queue, now_ms
from tests import dashboard_seed
from tests.keyspace import placement, snapshot, states_of
from tests.queue_helpers import stream_events
from tests.test_queue_admin import finish
from tests.transition_helpers import NOW, TOKEN, fetch, finish_options, seed_job
from tests.transition_helpers import finish as finish_job

Breakage = Callable[[Redis, str], object]


def _replace(value: Callable[[Redis, str], object]) -> Breakage:
    def breakage(client: Redis, key: str) -> None:
        client.delete(key)
        value(client, key)

    return breakage


# What another writer (or a hand edit) may leave at a job's key.
BREAKAGES: dict[str, Breakage] = {
    "a string": _replace(lambda c, k: c.set(k, "corrupt")),
    "a list": _replace(lambda c, k: c.rpush(k, "x")),
    "a hash with no job fields": _replace(lambda c, k: c.hset(k, "junk", "1")),
}
REASONS = {
    "a string": "type:string",
    "a list": "type:list",
    "a hash with no job fields": "not_a_job",
}


@pytest.fixture
def queue(redis_client: Redis) -> Queue:
    return Queue("jobs", redis_client)


def _failed(client: Redis, queue: Queue, count: int) -> list[str]:
    ids = queue.add_bulk([("n", {"i": i}, None) for i in range(count)])
    finish(client, queue, ids, "failed", at=now_ms() - 1000)
    client.delete(queue.keys.events)
    return ids


# -- the reported case: one corrupt key in retry-all ---------------------------


def test_retry_all_moves_every_sound_job_and_leaves_the_corrupt_one_reported(
    redis_client: Redis, queue: Queue
) -> None:
    ids = _failed(redis_client, queue, 2000)
    redis_client.set(queue.keys.job("5"), "corrupt")

    result = queue.retry_all()

    assert result.count == 1999
    assert result.skipped == {"5": SkippedJob("5", "type:string")}
    where = placement(redis_client, queue.keys)
    assert len(where) == 2000
    assert where.pop("5") == ["failed"]
    assert set(map(tuple, where.values())) == {("wait",)}
    assert redis_client.get(queue.keys.job("5")) == b"corrupt"
    waiting = [e["jobId"] for e in stream_events(redis_client, queue) if e["event"] == "waiting"]
    assert sorted(waiting) == sorted(set(ids) - {"5"})


def test_retry_all_passes_over_more_broken_jobs_than_a_batch_holds(
    redis_client: Redis, queue: Queue
) -> None:
    ids = _failed(redis_client, queue, 60)
    for job_id in ids[:25]:  # the oldest failures: at the front of every batch
        redis_client.set(queue.keys.job(job_id), "corrupt")
    result = queue.retry_all(batch=10)
    assert (result.count, sorted(result.skipped, key=int)) == (35, ids[:25])
    assert queue.get_counts("failed", "wait") == {"failed": 25, "wait": 35}


def test_retry_all_takes_each_batch_after_the_broken_jobs_out_by_its_own_ranks(
    redis_client: Redis, queue: Queue
) -> None:
    # The broken jobs failed first, so they stay at the front of failed; a
    # later batch whose every job moves leaves failed by rank, from the
    # count passed over (the ranks its ids were read at), never from 0.
    ids = queue.add_bulk([("n", {"i": i}, None) for i in range(30)])
    first = now_ms() - 10_000
    for position, job_id in enumerate(ids):
        finish(redis_client, queue, [job_id], "failed", at=first + position)
    for job_id in ids[:3]:
        redis_client.set(queue.keys.job(job_id), "corrupt")
    result = queue.retry_all(batch=5)
    assert (result.count, sorted(result.skipped, key=int)) == (27, ids[:3])
    assert [m.decode() for m in redis_client.zrange(queue.keys.failed, 0, -1)] == ids[:3]
    waiting = [m.decode() for m in redis_client.lrange(queue.keys.wait, 0, -1)]
    assert sorted(waiting, key=int) == ids[3:]


def test_promote_all_leaves_a_broken_delayed_job_and_a_two_state_one(
    redis_client: Redis, queue: Queue
) -> None:
    ids = queue.add_bulk([("d", None, {"delay": 60_000}) for _ in range(5)])
    redis_client.hset(queue.keys.job(ids[0]), "priority", "urgent")
    redis_client.zadd(queue.keys.failed, {ids[1]: 1})
    before = {job_id: redis_client.hgetall(queue.keys.job(job_id)) for job_id in ids[:2]}
    result = queue.promote_all()
    assert result.count == 3
    assert result.skipped == {
        ids[0]: SkippedJob(ids[0], "field:priority"),
        ids[1]: SkippedJob(ids[1], "states:delayed,failed"),
    }
    assert states_of(redis_client, queue.keys, ids[0]) == ["delayed"]
    assert sorted(states_of(redis_client, queue.keys, ids[1])) == ["delayed", "failed"]
    assert {job_id: redis_client.hgetall(queue.keys.job(job_id)) for job_id in ids[:2]} == before


@pytest.mark.parametrize("also", ["active", "paused"])
def test_retry_all_leaves_a_failed_job_another_list_holds_too(
    redis_client: Redis, queue: Queue, also: str
) -> None:
    ids = _failed(redis_client, queue, 5)
    redis_client.lpush(queue.keys.state(also), ids[2])
    result = queue.retry_all()
    assert result.count == 4
    assert result.skipped == {ids[2]: SkippedJob(ids[2], f"states:failed,{also}")}
    assert sorted(states_of(redis_client, queue.keys, ids[2])) == sorted(["failed", also])


def test_the_lists_are_searched_to_their_end_past_what_one_call_looks_at(
    redis_client: Redis, queue: Queue
) -> None:
    ids = _failed(redis_client, queue, 4)
    # The oldest waiting job at the tail of 12,000: three calls' stretches.
    redis_client.rpush(queue.keys.wait, ids[1], *(f"w{n}" for n in range(12_000)))
    redis_client.rpush(queue.keys.active, *(f"a{n}" for n in range(6_000)), ids[3])
    result = queue.retry_all()
    assert result.count == 2
    assert result.skipped == {
        ids[1]: SkippedJob(ids[1], "states:failed,wait"),
        ids[3]: SkippedJob(ids[3], "states:failed,active"),
    }
    assert redis_client.lrange(queue.keys.wait, 0, 1) == [ids[2].encode(), ids[0].encode()]


def test_clean_keeps_a_delayed_job_wait_holds_too_in_every_batch(
    redis_client: Redis, queue: Queue
) -> None:
    """A delayed clean looks at the whole set in each call of 1,000: the job
    kept in the first is looked at again by the second, and kept again."""
    ids = queue.add_bulk([("d", None, {"delay": 60_000, "timestamp": 1000}) for _ in range(1500)])
    redis_client.lpush(queue.keys.wait, ids[0])
    result = queue.clean("delayed", grace_ms=0)
    assert result.count == 1499
    assert result.skipped == {ids[0]: SkippedJob(ids[0], "states:delayed,wait")}
    assert sorted(states_of(redis_client, queue.keys, ids[0])) == ["delayed", "wait"]
    assert redis_client.hget(queue.keys.job(ids[0]), "name") == b"d"


# -- single actions on a broken job: nothing changes -----------------------------


def _job_in(client: Redis, queue: Queue, state: str) -> str:
    job_id = queue.add("n", {"x": 1}, {"delay": 60_000} if state == "delayed" else None)
    if state in ("failed", "completed"):
        finish(client, queue, [job_id], state, at=now_ms() - 1000)
    return job_id


ACTIONS: dict[str, tuple[str, Callable[[Queue, str], object]]] = {
    "retry": ("failed", lambda q, i: q.retry(i)),
    "retry completed": ("completed", lambda q, i: q.retry(i, state="completed")),
    "promote": ("delayed", lambda q, i: q.promote(i)),
    "fail": ("wait", lambda q, i: q.fail(i, "stop")),
    "remove": ("failed", lambda q, i: q.remove(i)),
    "progress": ("wait", lambda q, i: q.update_progress(i, 50)),
    "log": ("wait", lambda q, i: q.add_log(i, "line")),
}


@pytest.mark.parametrize("breakage", BREAKAGES)
@pytest.mark.parametrize("action", ACTIONS)
def test_an_action_on_a_job_whose_key_is_broken_refuses_and_changes_nothing(
    redis_client: Redis, queue: Queue, action: str, breakage: str
) -> None:
    state, run = ACTIONS[action]
    job_id = _job_in(redis_client, queue, state)
    BREAKAGES[breakage](redis_client, queue.keys.job(job_id))
    before = snapshot(redis_client)
    with pytest.raises(JobBroken) as refused:
        run(queue, job_id)
    assert refused.value.reason == REASONS[breakage]
    assert snapshot(redis_client) == before


@pytest.mark.parametrize(
    ("state", "also", "run"),
    [
        ("failed", "delayed", lambda q, i: q.retry(i)),
        ("failed", "wait", lambda q, i: q.retry(i)),
        ("delayed", "completed", lambda q, i: q.promote(i)),
        ("wait", "completed", lambda q, i: q.fail(i, "stop")),
        ("delayed", "prioritized", lambda q, i: q.fail(i, "stop")),
    ],
)
def test_a_job_in_two_states_is_left_in_both_and_reported(
    redis_client: Redis, queue: Queue, state: str, also: str, run: Callable[[Queue, str], object]
) -> None:
    job_id = _job_in(redis_client, queue, state)
    if also == "wait":
        redis_client.lpush(queue.keys.wait, job_id)
    else:
        redis_client.zadd(queue.keys.state(also), {job_id: 1})
    before = snapshot(redis_client)
    with pytest.raises(JobBroken) as refused:
        run(queue, job_id)
    assert refused.value.reason.startswith("states:")
    assert set(refused.value.reason[len("states:") :].split(",")) == {state, also}
    assert snapshot(redis_client) == before


def test_remove_takes_a_job_out_of_every_state_holding_it(
    redis_client: Redis, queue: Queue
) -> None:
    job_id = _job_in(redis_client, queue, "failed")
    redis_client.lpush(queue.keys.wait, job_id)
    redis_client.zadd(queue.keys.delayed, {job_id: 1})
    queue.remove(job_id)
    assert states_of(redis_client, queue.keys, job_id) == []
    assert not redis_client.exists(queue.keys.job(job_id))


@pytest.mark.parametrize(
    ("field", "value", "run"),
    [
        ("priority", "high", lambda q, i: q.retry(i)),
        ("priority", "inf", lambda q, i: q.retry(i)),
        ("priority", "nan", lambda q, i: q.retry(i)),
    ],
)
def test_a_field_the_move_computes_with_that_is_no_number_refuses(
    redis_client: Redis, queue: Queue, field: str, value: str, run: Callable[[Queue, str], object]
) -> None:
    job_id = _job_in(redis_client, queue, "failed")
    redis_client.hset(queue.keys.job(job_id), field, value)
    before = snapshot(redis_client)
    with pytest.raises(JobBroken, match=f"its {field} field is not a number"):
        run(queue, job_id)
    assert snapshot(redis_client) == before


# -- a queue key of the wrong type: the whole call refuses -----------------------


def test_a_failed_set_that_is_a_string_refuses_retry_all_before_any_write(
    redis_client: Redis, queue: Queue
) -> None:
    queue.add("n")
    redis_client.set(queue.keys.failed, "not a zset")
    before = snapshot(redis_client)
    with pytest.raises(BulkStopped) as stopped:
        queue.retry_all()
    assert stopped.value.done.count == 0
    refusal = stopped.value.refusal
    assert isinstance(refusal, CorruptKey)
    assert (refusal.key, refusal.actual, refusal.expected) == (queue.keys.failed, "string", "zset")
    assert "Nothing was changed" in str(refusal)
    assert snapshot(redis_client) == before


@pytest.mark.parametrize(
    ("structure", "run"),
    [
        ("wait", lambda q, i: q.promote(i)),
        ("events", lambda q, i: q.promote(i)),
        ("meta", lambda q, i: q.fail(i, "x")),
        ("pc", lambda q, i: q.promote(i)),
        ("stalled", lambda q, i: q.remove(i)),
        ("wait", lambda q, i: q.add("another")),
        ("id", lambda q, i: q.add("another")),
        ("wait", lambda q, i: q.pause()),
    ],
)
def test_a_queue_key_of_the_wrong_type_refuses_the_action_naming_it(
    redis_client: Redis, queue: Queue, structure: str, run: Callable[[Queue, str], object]
) -> None:
    job_id = _job_in(redis_client, queue, "delayed")
    key = queue.keys.base + structure
    redis_client.delete(key)
    if structure in ("pc", "id"):
        redis_client.set(key, "twelve")  # a counter INCR cannot count on
    elif structure == "stalled":
        redis_client.set(key, "x")
    else:
        redis_client.sadd(key, "x")
    before = snapshot(redis_client)
    with pytest.raises(CorruptKey) as refused:
        run(queue, job_id)
    assert refused.value.key == key
    assert snapshot(redis_client) == before


def test_garbage_in_meta_settings_counts_as_unset(redis_client: Redis, queue: Queue) -> None:
    redis_client.hset(queue.keys.meta, mapping={"opts.maxLenEvents": "-5", "concurrency": "lots"})
    job_id = _job_in(redis_client, queue, "failed")
    queue.retry(job_id)
    assert states_of(redis_client, queue.keys, job_id) == ["wait"]
    redis_client.hset(queue.keys.meta, "opts.maxLenEvents", "1e400")
    queue.fail(job_id, "again")
    assert states_of(redis_client, queue.keys, job_id) == ["failed"]


# -- the worker's transitions -------------------------------------------------------


@pytest.fixture
def keys() -> QueueKeys:
    return QueueKeys("work")


def test_a_pickup_passes_over_a_broken_job_leaving_it_waiting(
    redis_client: Redis, keys: QueueKeys
) -> None:
    seed_job(redis_client, keys, "good")
    seed_job(redis_client, keys, "bad", fields={"ats": "several"})
    seed_job(redis_client, keys, "junk")
    BREAKAGES["a string"](redis_client, keys.job("junk"))
    # wait (head .. tail): junk, bad, good; workers take the tail first.
    redis_client.delete(keys.wait)
    redis_client.rpush(keys.wait, "junk", "bad", "good")
    assert fetch(redis_client, keys).job_id == "good"
    fetched = fetch(redis_client, keys)
    assert fetched.job_id is None
    assert fetched.broken == (SkippedJob("bad", "field:ats"), SkippedJob("junk", "type:string"))
    assert sorted(redis_client.lrange(keys.wait, 0, -1)) == [b"bad", b"junk"]
    assert redis_client.get(keys.job("junk")) == b"corrupt"
    assert redis_client.hget(keys.job("bad"), "ats") == b"several"


def test_a_broken_prioritized_job_keeps_its_place_and_the_next_one_runs(
    redis_client: Redis, keys: QueueKeys
) -> None:
    seed_job(redis_client, keys, "first", state="prioritized", priority=1)
    seed_job(redis_client, keys, "second", state="prioritized", priority=2)
    redis_client.hset(keys.job("first"), "atm", "x")
    fetched = fetch(redis_client, keys)
    assert (fetched.job_id, fetched.broken) == ("second", (SkippedJob("first", "field:atm"),))
    assert redis_client.zrange(keys.prioritized, 0, -1) == [b"first"]


def test_a_due_delayed_job_that_is_broken_stays_and_does_not_wake_workers_at_once(
    redis_client: Redis, keys: QueueKeys
) -> None:
    seed_job(redis_client, keys, "due", state="delayed", due_ms=NOW - 10)
    seed_job(redis_client, keys, "later", state="delayed", due_ms=NOW + 5000)
    BREAKAGES["a list"](redis_client, keys.job("due"))
    fetched = fetch(redis_client, keys)
    assert fetched.broken == (SkippedJob("due", "type:list"),)
    # The sleep ends when "later" is due, not at "due"'s past time.
    assert fetched.next_delayed_due_ms == NOW + 5000
    assert redis_client.zrange(keys.delayed, 0, -1) == [b"due", b"later"]


def test_an_id_without_a_hash_in_wait_is_dropped_by_the_pickup_and_reported(
    redis_client: Redis, keys: QueueKeys
) -> None:
    seed_job(redis_client, keys, "good")
    redis_client.rpush(keys.wait, "ghost")
    fetched = fetch(redis_client, keys)
    assert (fetched.job_id, fetched.broken) == ("good", (SkippedJob("ghost", "missing"),))
    assert redis_client.llen(keys.wait) == 0


@pytest.mark.parametrize(
    "move",
    [
        lambda c, k: finish_job(c, k, "1", options=finish_options()),
        lambda c, k: scripts.run(
            c, t.move_to_delayed(k, "1", token=TOKEN, now_ms=NOW, delay_ms=100)
        ),
    ],
    ids=["finish", "delay"],
)
def test_a_finish_with_an_attempt_counter_that_is_no_integer_changes_nothing(
    redis_client: Redis, keys: QueueKeys, move: Callable[[Redis, QueueKeys], object]
) -> None:
    seed_job(redis_client, keys, "1", state="active", lock_token=TOKEN, fields={"atm": "1.5"})
    before = snapshot(redis_client)
    answer = move(redis_client, keys)
    assert answer == [b"broken", b"field:atm"]
    assert snapshot(redis_client) == before


def test_the_stalled_check_leaves_a_broken_suspect_in_active_and_reports_it(
    redis_client: Redis, keys: QueueKeys
) -> None:
    seed_job(redis_client, keys, "bad", state="active", fields={"stc": "often"})
    seed_job(redis_client, keys, "good", state="active")
    redis_client.rpush(keys.active, "ghost")
    redis_client.sadd(keys.stalled, "bad", "good", "ghost")
    call = t.move_stalled_jobs_to_wait(keys, max_stalled_count=1, now_ms=NOW, stalled_interval_ms=1)
    checked = t.decode_stalled(scripts.run(redis_client, call))
    assert checked.recovered == ["good"]
    assert set(checked.broken) == {SkippedJob("bad", "field:stc"), SkippedJob("ghost", "missing")}
    assert redis_client.lrange(keys.active, 0, -1) == [b"bad"]
    assert redis_client.lrange(keys.wait, 0, -1) == [b"good"]


def test_a_child_finishes_although_its_parents_keys_are_broken(
    redis_client: Redis, keys: QueueKeys
) -> None:
    parent = QueueKeys("parents")
    redis_client.hset(parent.job("p"), "name", "parent")
    redis_client.set(parent.dependencies("p"), "not a set")
    redis_client.zadd(parent.waiting_children, {"p": 1})
    seed_job(
        redis_client, keys, "child", state="active", lock_token=TOKEN,
        fields={"parentKey": parent.job("p")},
    )  # fmt: skip
    assert finish_job(redis_client, keys, "child", options=finish_options()) == 0
    assert states_of(redis_client, keys, "child") == ["completed"]
    assert redis_client.get(parent.dependencies("p")) == b"not a set"
    assert redis_client.zrange(parent.waiting_children, 0, -1) == [b"p"]


# -- adds -----------------------------------------------------------------------------


def test_a_generated_id_whose_key_is_taken_by_garbage_is_passed_over(
    redis_client: Redis, queue: Queue
) -> None:
    redis_client.set(queue.keys.job("1"), "somebody else's")
    assert queue.add("n") == "2"
    assert redis_client.get(queue.keys.job("1")) == b"somebody else's"


def test_a_parent_that_is_no_hash_is_no_parent(redis_client: Redis, queue: Queue) -> None:
    redis_client.set("bull:flows:p", "x")
    with pytest.raises(ParentJobNotExist):
        queue.add("child", opts={"parent": {"id": "p", "queue": "bull:flows"}})
    assert redis_client.get("bull:flows:p") == b"x"


def test_a_deduplication_key_of_another_type_neither_blocks_nor_is_replaced(
    redis_client: Redis, queue: Queue
) -> None:
    redis_client.rpush(queue.keys.deduplication("d"), "x")
    job_id = queue.add("n", opts={"deduplication": {"id": "d"}})
    assert states_of(redis_client, queue.keys, job_id) == ["wait"]
    assert redis_client.lrange(queue.keys.deduplication("d"), 0, -1) == [b"x"]


# -- deletions --------------------------------------------------------------------------


def test_clean_skips_what_is_not_a_job_hash_and_deletes_the_rest(
    redis_client: Redis, queue: Queue
) -> None:
    ids = _failed(redis_client, queue, 30)
    redis_client.set(queue.keys.job(ids[0]), "corrupt")
    redis_client.zadd(queue.keys.delayed, {ids[1]: 1})
    redis_client.zadd(queue.keys.failed, {"ghost": 1})
    result = queue.clean("failed", grace_ms=0, limit=0)
    assert result.count == 29  # the 28 sound ones and the id without a hash
    assert result.skipped == {
        ids[0]: SkippedJob(ids[0], "type:string"),
        ids[1]: SkippedJob(ids[1], "states:failed,delayed"),
    }
    assert sorted(redis_client.zrange(queue.keys.failed, 0, -1)) == sorted(
        [ids[0].encode(), ids[1].encode()]
    )
    assert redis_client.get(queue.keys.job(ids[0])) == b"corrupt"


def test_clean_by_age_skips_a_job_whose_timestamp_is_no_number(
    redis_client: Redis, queue: Queue
) -> None:
    old = queue.add("n", opts={"timestamp": 1000})
    odd = queue.add("n", opts={"timestamp": 1000})
    redis_client.hset(queue.keys.job(odd), "timestamp", "yesterday")
    result = queue.clean("wait", grace_ms=0)
    assert (result.ids, list(result.skipped)) == ([old], [odd])
    assert states_of(redis_client, queue.keys, odd) == ["wait"]


def test_drain_and_obliterate_leave_keys_that_are_no_job_hash(
    redis_client: Redis, queue: Queue
) -> None:
    ids = queue.add_bulk([("n", None, None) for _ in range(12)])
    redis_client.set(queue.keys.job(ids[3]), "corrupt")
    assert queue.drain(batch=5) == [SkippedJob(ids[3], "type:string")]
    assert redis_client.lrange(queue.keys.wait, 0, -1) == [ids[3].encode()]
    assert queue.obliterate(batch=5) == [SkippedJob(ids[3], "type:string")]
    assert redis_client.get(queue.keys.job(ids[3])) == b"corrupt"
    assert not redis_client.exists(queue.keys.meta, queue.keys.events)


# Job 2 of the drained state, which another state holds too (a hand LPUSH or
# ZADD, another writer), and the reason drain reports it with: the state it
# meets the job in first (it drains wait, paused, prioritized, delayed).
DRAIN_DOUBLES = {
    ("wait", "failed"): "states:wait,failed",
    ("wait", "active"): "states:wait,active",
    ("paused", "completed"): "states:paused,completed",
    ("prioritized", "active"): "states:prioritized,active",
    ("delayed", "waiting-children"): "states:delayed,waiting-children",
    ("delayed", "wait"): "states:wait,delayed",
}


@pytest.mark.parametrize(("state", "also"), DRAIN_DOUBLES)
def test_drain_leaves_a_job_another_state_holds_too_and_says_so(
    redis_client: Redis, queue: Queue, state: str, also: str
) -> None:
    for job_id in ("1", "2", "3"):
        dashboard_seed.seed_job(redis_client, queue.keys, job_id, state=state, score=1)
    dashboard_seed.seed_job(redis_client, queue.keys, "2", state=also, score=1)
    job_before = redis_client.hgetall(queue.keys.job("2"))

    skipped = queue.drain(delayed=True, batch=2)

    assert skipped == [SkippedJob("2", DRAIN_DOUBLES[state, also])]
    where = placement(redis_client, queue.keys)
    assert list(where) == ["2"]
    assert sorted(where["2"]) == sorted([state, also])
    assert redis_client.hgetall(queue.keys.job("2")) == job_before
    assert not redis_client.exists(queue.keys.job("1"), queue.keys.job("3"))


def test_drain_without_delayed_leaves_a_waiting_job_delayed_holds_too(
    redis_client: Redis, queue: Queue
) -> None:
    dashboard_seed.seed_job(redis_client, queue.keys, "1", state="wait")
    dashboard_seed.seed_job(redis_client, queue.keys, "1", state="delayed", score=1)
    assert queue.drain() == [SkippedJob("1", "states:wait,delayed")]
    assert sorted(states_of(redis_client, queue.keys, "1")) == ["delayed", "wait"]


def test_drain_reads_each_other_list_once_a_call_not_once_a_job(
    redis_client: Redis, queue: Queue
) -> None:
    """The lists are read whole per call (LRANGE), never walked per job
    (LPOS): 3,000 waiting jobs in 3 calls beside 500 active ones."""
    dashboard_seed.seed_jobs(redis_client, queue.keys, "wait", 3000)
    redis_client.rpush(queue.keys.active, *(f"a{n}" for n in range(500)))
    redis_client.config_resetstat()
    assert queue.drain(batch=1000) == []
    stats = redis_client.info("commandstats")
    assert "cmdstat_lpos" not in stats
    assert stats["cmdstat_evalsha"]["calls"] == 4  # the last finds wait empty
    assert redis_client.llen(queue.keys.wait) == 0
    assert redis_client.llen(queue.keys.active) == 500


@pytest.mark.parametrize(
    ("state", "also"), [("wait", "active"), ("paused", "active"), ("wait", "paused")]
)
def test_clean_of_a_list_leaves_a_job_another_list_holds_too(
    redis_client: Redis, queue: Queue, state: str, also: str
) -> None:
    for job_id in ("1", "2", "3"):
        dashboard_seed.seed_job(redis_client, queue.keys, job_id, state=state)
    dashboard_seed.seed_job(redis_client, queue.keys, "2", state=also, fields={"timestamp": 1})
    job_before = redis_client.hgetall(queue.keys.job("2"))
    result = queue.clean("wait", grace_ms=0)
    assert result.skipped == {"2": SkippedJob("2", f"states:{state},{also}")}
    assert sorted(result.ids) == ["1", "3"]
    assert sorted(states_of(redis_client, queue.keys, "2")) == sorted([state, also])
    assert redis_client.hgetall(queue.keys.job("2")) == job_before


def test_a_list_of_another_type_holds_no_job_for_drain_and_clean(
    redis_client: Redis, queue: Queue
) -> None:
    """The states drain and a clean of wait only read are passed over when
    broken, as listedJobs does: they hold no job, and refusing would stop an
    operator from freeing memory (a clean still refuses a broken sorted set,
    as it did)."""
    dashboard_seed.seed_jobs(redis_client, queue.keys, "wait", 4)
    redis_client.set(queue.keys.active, "x")
    assert queue.clean("wait", grace_ms=0, limit=2).count == 2
    redis_client.set(queue.keys.completed, "x")
    assert queue.drain() == []
    assert redis_client.llen(queue.keys.wait) == 0


def test_a_job_id_named_like_a_queue_key_never_deletes_that_key(
    redis_client: Redis, queue: Queue
) -> None:
    queue.pause()  # meta now holds "paused"
    redis_client.zadd(queue.keys.failed, {"meta": 1})
    with pytest.raises(JobBroken, match="no job fields"):
        queue.remove("meta")
    assert redis_client.hget(queue.keys.meta, "paused") is not None


def test_the_admin_scripts_take_every_sorted_set_state_in_their_keys() -> None:
    """Cluster safety: the states a move looks at come in KEYS, not from the prefix."""
    keys = QueueKeys("q", prefix="{t}")
    for call in (
        admin.requeue_job(keys, "1", "failed"),
        admin.fail_job(keys, "1", reason="r", now_ms=1),
        admin.clean_jobs(keys, "failed", cutoff_ms=1, limit=1, now_ms=1),
    ):
        for state in ("completed", "failed", "delayed", "waiting-children"):
            assert keys.state(state) in call.keys, (call.script.name, state)


def test_reports_are_json_friendly_words() -> None:
    words = {reason: SkippedJob("7", reason).describe() for reason in REASONS.values()}
    assert words["type:string"] == "its key is a string, not a job hash"
    assert json.dumps(words)


# -- the dashboard says so ----------------------------------------------------------------

API = "/api/queues/bull/jobs/"


@pytest.fixture
def actor(dashboard_redis: Redis, client_as: Callable[[str | None], Any]) -> Any:
    return client_as("actor")


def _post_json(client: Any, url: str, body: dict[str, Any]) -> Any:
    return client.post(url, json.dumps(body), content_type="application/json")


def test_retry_all_names_the_broken_job_in_the_page_the_json_and_the_audit_line(
    dashboard_redis: Redis, actor: Any, queue: Queue, caplog: pytest.LogCaptureFixture
) -> None:
    ids = _failed(dashboard_redis, queue, 30)
    dashboard_redis.set(queue.keys.job("5"), "corrupt")
    caplog.set_level(logging.INFO, logger="echomq.audit")
    response = actor.post("/queues/bull/jobs/bulk/", {"action": "retry_all"}, follow=True)
    (message,) = response.context["messages"]
    assert str(message) == (
        "29 failed jobs moved back to waiting; "
        "1 skipped as broken: job 5 (its key is a string, not a job hash)"
    )
    assert message.level_tag == "warning"
    audit = [r.getMessage() for r in caplog.records if r.name == "echomq.audit"]
    assert audit[-1].endswith("result=count=29 skipped=5")

    finish(dashboard_redis, queue, [i for i in ids if i != "5"], "failed", at=now_ms() - 1000)
    body = _post_json(actor, API + "bulk/", {"action": "retry_all"}).json()
    assert (body["count"], body["skipped"]) == (
        29,
        [{"id": "5", "reason": "its key is a string, not a job hash", "code": "type:string"}],
    )


# Job 2 is in failed (or delayed) and, by a hand LPUSH, in wait too, between
# two sound waiting jobs: what the probe of issue 22 left.
TWO_STATES = {"retry_all": "failed", "promote_all": "delayed", "clean": "failed"}


@pytest.mark.parametrize("action", TWO_STATES)
def test_a_bulk_action_leaves_a_job_a_list_also_holds_and_says_so(
    dashboard_redis: Redis, actor: Any, queue: Queue, action: str
) -> None:
    state = TWO_STATES[action]
    dashboard_seed.seed_job(dashboard_redis, queue.keys, "8", state="wait")
    finished = now_ms() - 1000 if state == "failed" else None  # delayed: due in a minute
    for job_id in ("1", "2", "3"):
        dashboard_seed.seed_job(dashboard_redis, queue.keys, job_id, state=state, score=finished)
    dashboard_redis.lpush(queue.keys.wait, "2")
    dashboard_seed.seed_job(dashboard_redis, queue.keys, "9", state="wait")
    job_before = dashboard_redis.hgetall(queue.keys.job("2"))

    body = {"action": action, "state": state, "grace_ms": 0}
    response = _post_json(actor, API + "bulk/", body)

    assert dashboard_redis.lrange(queue.keys.wait, 0, -1).count(b"2") == 1
    assert dashboard_redis.hgetall(queue.keys.job("2")) == job_before
    assert dashboard_redis.zscore(queue.keys.state(state), "2") is not None
    answer = response.json()
    assert answer["count"] == 2
    assert answer["skipped"] == [
        {
            "id": "2",
            "reason": f"it is in more than one state ({state} and wait)",
            "code": f"states:{state},wait",
        }
    ]
    assert answer["message"].endswith(
        f"; 1 skipped as broken: job 2 (it is in more than one state ({state} and wait))"
    )


def test_a_single_action_on_a_broken_job_answers_409_job_broken(
    dashboard_redis: Redis, actor: Any, queue: Queue
) -> None:
    _failed(dashboard_redis, queue, 2)
    dashboard_redis.hset(queue.keys.job("2"), "priority", "high")
    response = _post_json(actor, API + "actions/", {"action": "retry", "ids": ["2"]})
    assert response.status_code == 409
    body = response.json()
    assert body["error"]["code"] == "job_broken"
    assert (
        body["results"][0]["message"] == "Job 2 was not retried: its priority field is not a number"
    )


def test_a_queue_key_of_the_wrong_type_answers_409_corrupt_key(
    dashboard_redis: Redis, actor: Any, queue: Queue
) -> None:
    _failed(dashboard_redis, queue, 2)
    dashboard_redis.delete(queue.keys.wait)
    dashboard_redis.set(queue.keys.wait, "oops")
    before = snapshot(dashboard_redis)
    response = _post_json(actor, API + "bulk/", {"action": "retry_all"})
    assert response.status_code == 409
    error = response.json()["error"]
    assert error["code"] == "corrupt_key"
    assert error["message"].startswith(
        "Nothing was changed: the key bull:jobs:wait holds a string, where the queue keeps a list."
    )
    assert snapshot(dashboard_redis) == before


def test_a_list_of_the_wrong_type_does_not_keep_clean_from_running(
    redis_client: Redis, queue: Queue
) -> None:
    """The search for copies in the lists passes over a list key that holds
    no list (no job is in it); clean never touches the lists itself."""
    ids = _failed(redis_client, queue, 3)
    redis_client.set(queue.keys.active, "corrupt")
    assert queue.clean("failed", grace_ms=0).count == 3
    assert redis_client.get(queue.keys.active) == b"corrupt"
    assert not redis_client.exists(*(queue.keys.job(job_id) for job_id in ids))
