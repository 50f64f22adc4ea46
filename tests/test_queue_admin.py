"""The admin actions of Queue against a real Redis: each moves a job exactly
once or refuses with the closed code and changes nothing."""

from __future__ import annotations

import json
from collections.abc import Iterable

import pytest
from redis import Redis

from queues import scripts
from queues.commands import transitions as t
from queues.errors import JobBelongsToJobScheduler, JobNotExist, JobNotInState, SkippedJob
from queues.pickup import decode_answer
from queues.queue import BulkResult, Queue, now_ms
from tests.queue_helpers import stream_events as events

LOCK_TOKEN = "worker-token"


@pytest.fixture
def queue(redis_client: Redis) -> Queue:
    return Queue("jobs", redis_client)


def last_event(client: Redis, queue: Queue) -> dict[str, str]:
    return events(client, queue)[-1]


def finish(client: Redis, queue: Queue, ids: Iterable[str], state: str, at: int) -> None:
    """What a worker leaves behind: ready jobs moved to a finished set."""
    pipe = client.pipeline()
    for job_id in ids:
        pipe.lrem(queue.keys.wait, 1, job_id)
        pipe.zadd(queue.keys.finished(state), {job_id: at})
        field = "failedReason" if state == "failed" else "returnvalue"
        pipe.hset(
            queue.keys.job(job_id),
            mapping={field: "boom", "processedOn": at - 5, "finishedOn": at, "atm": 1},
        )
    pipe.execute()


def activate(client: Redis, queue: Queue) -> str:
    """What moveToActive leaves behind for the oldest ready job."""
    job_id = (client.rpoplpush(queue.keys.wait, queue.keys.active) or b"").decode()
    client.set(queue.keys.lock(job_id), LOCK_TOKEN, px=30_000)
    client.sadd(queue.keys.stalled, job_id)
    return job_id


# -- retry -------------------------------------------------------------------


def test_retry_failed_job_resets_outcome_and_emits_waiting(
    redis_client: Redis, queue: Queue
) -> None:
    job_id = queue.add("a", opts={"attempts": 2})
    finish(redis_client, queue, [job_id], "failed", at=now_ms())

    queue.retry(job_id)

    assert redis_client.zcard(queue.keys.failed) == 0
    assert redis_client.lrange(queue.keys.wait, 0, -1) == [job_id.encode()]
    raw = redis_client.hgetall(queue.keys.job(job_id))
    assert not {b"failedReason", b"finishedOn", b"processedOn"} & raw.keys()
    assert raw[b"atm"] == b"1"  # attempts made are history, kept
    assert redis_client.zscore(queue.keys.marker, "0") == 0
    assert last_event(redis_client, queue) == {
        "event": "waiting",
        "jobId": job_id,
        "prev": "failed",
    }


def test_retry_completed_job_and_prioritized_target(redis_client: Redis, queue: Queue) -> None:
    job_id = queue.add("a", opts={"priority": 4})
    redis_client.zrem(queue.keys.prioritized, job_id)
    finish(redis_client, queue, [job_id], "completed", at=now_ms())

    queue.retry(job_id, state="completed")

    assert redis_client.zrange(queue.keys.prioritized, 0, -1) == [job_id.encode()]
    assert redis_client.hget(queue.keys.job(job_id), "returnvalue") is None
    assert last_event(redis_client, queue)["prev"] == "completed"


def test_retry_while_paused_lands_in_paused(redis_client: Redis, queue: Queue) -> None:
    job_id = queue.add("a")
    finish(redis_client, queue, [job_id], "failed", at=now_ms())
    queue.pause()
    queue.retry(job_id)
    assert redis_client.lrange(queue.keys.paused, 0, -1) == [job_id.encode()]
    assert redis_client.exists(queue.keys.marker) == 0


def test_retry_wrong_state_or_missing_changes_nothing(redis_client: Redis, queue: Queue) -> None:
    job_id = queue.add("a")
    finish(redis_client, queue, [job_id], "failed", at=now_ms())
    queue.retry(job_id)
    before = redis_client.hgetall(queue.keys.job(job_id))
    stream_length = redis_client.xlen(queue.keys.events)

    with pytest.raises(JobNotInState):
        queue.retry(job_id)  # a second admin clicked too
    with pytest.raises(JobNotInState):
        queue.retry(job_id, state="completed")
    with pytest.raises(JobNotExist):
        queue.retry("gone")

    assert redis_client.hgetall(queue.keys.job(job_id)) == before
    assert redis_client.llen(queue.keys.wait) == 1
    assert redis_client.xlen(queue.keys.events) == stream_length


# -- promote -----------------------------------------------------------------


def test_promote_delayed_job(redis_client: Redis, queue: Queue) -> None:
    job_id = queue.add("a", opts={"delay": 60_000})
    queue.promote(job_id)
    assert redis_client.zcard(queue.keys.delayed) == 0
    assert redis_client.lrange(queue.keys.wait, 0, -1) == [job_id.encode()]
    assert redis_client.hget(queue.keys.job(job_id), "delay") == b"0"
    assert last_event(redis_client, queue) == {
        "event": "waiting",
        "jobId": job_id,
        "prev": "delayed",
    }
    with pytest.raises(JobNotInState):
        queue.promote(job_id)
    with pytest.raises(JobNotExist):
        queue.promote("gone")


# -- fail --------------------------------------------------------------------


@pytest.mark.parametrize(
    ("opts", "paused", "prev"),
    [
        ({}, False, "wait"),
        ({}, True, "paused"),
        ({"priority": 2}, False, "prioritized"),
        ({"delay": 60_000}, False, "delayed"),
    ],
)
def test_fail_from_each_waiting_state(
    redis_client: Redis, queue: Queue, opts: dict[str, int], paused: bool, prev: str
) -> None:
    if paused:
        queue.pause()
    job_id = queue.add("a", opts=opts)

    queue.fail(job_id, "bad input (by alice)")

    assert queue.get_state(job_id) == "failed"
    job = queue.get_job(job_id)
    assert job is not None
    assert job.failed_reason == "bad input (by alice)"
    assert job.stacktrace == ["bad input (by alice)"]
    assert abs((job.finished_on or 0) - now_ms()) < 5000
    assert redis_client.zscore(queue.keys.failed, job_id) == job.finished_on
    assert last_event(redis_client, queue) == {
        "event": "failed",
        "jobId": job_id,
        "failedReason": "bad input (by alice)",
        "prev": prev,
    }


def test_fail_active_job_deletes_lock_and_stalled_mark(redis_client: Redis, queue: Queue) -> None:
    job_id = queue.add("a")
    assert activate(redis_client, queue) == job_id

    queue.fail(job_id, "stuck")

    assert redis_client.exists(queue.keys.lock(job_id)) == 0
    assert redis_client.sismember(queue.keys.stalled, job_id) == 0
    assert redis_client.llen(queue.keys.active) == 0
    assert last_event(redis_client, queue)["prev"] == "active"


@pytest.mark.parametrize(("action", "code"), [("fail", -2), ("remove", -1)])
def test_worker_finish_after_admin_fail_or_remove_is_refused(
    redis_client: Redis, queue: Queue, action: str, code: int
) -> None:
    job_id = queue.add("a")
    pickup = t.move_to_active(queue.keys, token="tok", lock_duration_ms=30_000, now_ms=now_ms())
    assert decode_answer(scripts.run(redis_client, pickup), "moveToActive").job_id == job_id

    if action == "fail":
        queue.fail(job_id, "cancelled by admin")
    else:
        queue.remove(job_id)
    finish = t.move_to_finished(
        queue.keys,
        job_id,
        token="tok",
        now_ms=now_ms(),
        target="completed",
        value="42",
        fetch_next=False,
        options=t.FinishOptions(lock_duration_ms=30_000, attempts=1, keep=t.KeepJobs.keep_all()),
    )

    assert scripts.run(redis_client, finish) == code
    assert queue.get_counts("completed") == {"completed": 0}
    if action == "fail":
        job = queue.get_job(job_id)
        assert job is not None
        assert (job.failed_reason, job.returnvalue) == ("cancelled by admin", None)


def test_fail_appends_to_stacktrace_within_limit_and_survives_garbage(
    redis_client: Redis, queue: Queue
) -> None:
    kept = queue.add("a", opts={"stackTraceLimit": 2})
    redis_client.hset(queue.keys.job(kept), "stacktrace", json.dumps(["one", "two"]))
    queue.fail(kept, "three")
    assert json.loads(redis_client.hget(queue.keys.job(kept), "stacktrace") or b"") == [
        "two",
        "three",
    ]

    garbage = queue.add("b")
    redis_client.hset(queue.keys.job(garbage), mapping={"stacktrace": "not json", "opts": "{"})
    queue.fail(garbage, "why")
    assert json.loads(redis_client.hget(queue.keys.job(garbage), "stacktrace") or b"") == ["why"]


def test_fail_refuses_finished_or_missing_jobs(redis_client: Redis, queue: Queue) -> None:
    done, failed = queue.add("a"), queue.add("b")
    finish(redis_client, queue, [done], "completed", at=1000)
    finish(redis_client, queue, [failed], "failed", at=1000)
    with pytest.raises(JobNotInState):
        queue.fail(done, "x")
    with pytest.raises(JobNotInState):
        queue.fail(failed, "x")
    with pytest.raises(JobNotExist):
        queue.fail("gone", "x")
    assert redis_client.zscore(queue.keys.completed, done) == 1000
    assert redis_client.hget(queue.keys.job(failed), "failedReason") == b"boom"


# -- remove ------------------------------------------------------------------


@pytest.mark.parametrize("state", ["wait", "delayed", "prioritized", "completed", "active"])
def test_remove_from_any_state_deletes_every_job_key(
    redis_client: Redis, queue: Queue, state: str
) -> None:
    opts = (
        {"delay": 5000} if state == "delayed" else {"priority": 1} if state == "prioritized" else {}
    )
    job_id = queue.add("a", opts={**opts, "deduplication": {"id": "d1"}})
    if state == "completed":
        finish(redis_client, queue, [job_id], "completed", at=1000)
    if state == "active":
        activate(redis_client, queue)
    queue.add_log(job_id, "line")

    queue.remove(job_id)

    assert queue.get_state(job_id) is None
    for key in (queue.keys.job(job_id), queue.keys.logs(job_id), queue.keys.lock(job_id)):
        assert redis_client.exists(key) == 0
    assert redis_client.exists(queue.keys.deduplication("d1")) == 0
    assert redis_client.sismember(queue.keys.stalled, job_id) == 0
    assert last_event(redis_client, queue) == {"event": "removed", "jobId": job_id, "prev": state}
    with pytest.raises(JobNotExist):
        queue.remove(job_id)


def test_remove_keeps_dedup_key_naming_another_job_and_clears_orphans(
    redis_client: Redis, queue: Queue
) -> None:
    job_id = queue.add("a", opts={"deduplication": {"id": "d"}})
    redis_client.set(queue.keys.deduplication("d"), "newer")
    queue.remove(job_id)
    assert redis_client.get(queue.keys.deduplication("d")) == b"newer"

    redis_client.lpush(queue.keys.wait, "orphan")  # an id whose hash is gone
    queue.remove("orphan")
    assert redis_client.llen(queue.keys.wait) == 0


def test_remove_refuses_a_live_schedulers_next_run(redis_client: Redis, queue: Queue) -> None:
    job_id = queue.add("tick", opts={"delay": 60_000})
    redis_client.hset(queue.keys.job(job_id), "rjk", "every-minute")
    redis_client.zadd(queue.keys.repeat, {"every-minute": 1})
    with pytest.raises(JobBelongsToJobScheduler):
        queue.remove(job_id)
    assert queue.get_state(job_id) == "delayed"
    redis_client.delete(queue.keys.repeat)  # scheduler gone: the job is an ordinary one
    queue.remove(job_id)
    assert queue.get_state(job_id) is None


def test_removing_the_last_pending_child_releases_its_parent(
    redis_client: Redis, queue: Queue
) -> None:
    parents = Queue("parents", redis_client)
    parent_id = parents.add("parent", opts={"jobId": "p1"})
    redis_client.lrem(parents.keys.wait, 1, parent_id)
    redis_client.zadd(parents.keys.waiting_children, {parent_id: 1})
    link = {"parent": {"id": parent_id, "queue": "bull:parents"}}
    first, second = queue.add("child", opts=link), queue.add("child", opts=link)

    queue.remove(first)
    assert parents.get_state(parent_id) == "waiting-children"
    queue.clean("wait", grace_ms=0)  # the other child goes by a bulk delete

    assert redis_client.exists(parents.keys.dependencies(parent_id)) == 0
    assert parents.get_state(parent_id) == "wait"
    assert queue.get_state(second) is None
    assert events(redis_client, parents)[-1] == {
        "event": "waiting",
        "jobId": parent_id,
        "prev": "waiting-children",
    }


# -- pause / resume ----------------------------------------------------------


def test_pause_moves_ready_jobs_and_resume_brings_them_back(
    redis_client: Redis, queue: Queue
) -> None:
    ids = [queue.add("a") for _ in range(3)]
    later = queue.add("b", opts={"delay": 60_000})
    due = redis_client.zscore(queue.keys.marker, "1")

    queue.pause()
    queue.pause()  # idempotent: no second event
    assert queue.is_paused()
    assert redis_client.exists(queue.keys.wait) == 0
    assert redis_client.lrange(queue.keys.paused, 0, -1) == [i.encode() for i in ids[::-1]]
    assert redis_client.exists(queue.keys.marker) == 0
    assert queue.get_counts("wait")["wait"] == 3
    queue.add("c")

    queue.resume()
    queue.resume()
    assert not queue.is_paused()
    assert redis_client.llen(queue.keys.wait) == 4
    assert redis_client.exists(queue.keys.paused) == 0
    assert redis_client.zscore(queue.keys.marker, "0") == 0
    assert redis_client.zscore(queue.keys.marker, "1") == due
    assert [
        e["event"] for e in events(redis_client, queue) if e["event"] in ("paused", "resumed")
    ] == [
        "paused",
        "resumed",
    ]
    assert queue.get_state(later) == "delayed"


def test_pause_keeps_jobs_another_writer_left_in_the_target(
    redis_client: Redis, queue: Queue
) -> None:
    redis_client.rpush(queue.keys.wait, "w1", "w2")
    redis_client.rpush(queue.keys.paused, "p1")
    queue.pause()
    assert sorted(redis_client.lrange(queue.keys.paused, 0, -1)) == [b"p1", b"w1", b"w2"]
    assert redis_client.exists(queue.keys.wait) == 0


# -- clean -------------------------------------------------------------------


def test_clean_finished_jobs_older_than_grace_in_bounded_calls(
    redis_client: Redis, queue: Queue
) -> None:
    ids = queue.add_bulk([("a", {"i": i}, None) for i in range(30)])
    old, recent = ids[:25], ids[25:]
    finish(redis_client, queue, old, "completed", at=now_ms() - 60_000)
    finish(redis_client, queue, recent, "completed", at=now_ms())

    first = queue.clean("completed", grace_ms=30_000, limit=10).ids
    assert len(first) == 10
    assert set(first) <= set(old)
    rest = queue.clean("completed", grace_ms=30_000).ids
    assert sorted(first + rest) == sorted(old)
    assert queue.get_counts("completed") == {"completed": 5}
    everything = queue.clean("completed", grace_ms=0, keep_ids=False)
    assert (everything.count, everything.ids, everything.skipped) == (5, [], {})
    assert not any(redis_client.exists(queue.keys.job(i)) for i in old)
    cleaned = [e for e in events(redis_client, queue) if e["event"] == "cleaned"]
    assert [e["count"] for e in cleaned] == ["10", "15", "5"]


def test_clean_wait_by_creation_time_keeps_order_of_the_rest(
    redis_client: Redis, queue: Queue
) -> None:
    old = [queue.add("old", opts={"timestamp": 1000 + i}) for i in range(3)]
    new = [queue.add("new") for _ in range(2)]
    queue.pause()
    paused_old = queue.add("old", opts={"timestamp": 5})
    queue.resume()  # merges: wait now holds all six
    removed = queue.clean("wait", grace_ms=10_000).ids
    assert sorted(removed) == sorted([*old, paused_old])
    assert [j.id for j in queue.get_jobs("wait")] == new[::-1]


def test_clean_delayed_keeps_scheduler_runs(redis_client: Redis, queue: Queue) -> None:
    plain = queue.add("a", opts={"delay": 60_000, "timestamp": 1000})
    owned = queue.add("b", opts={"delay": 60_000, "timestamp": 1000})
    redis_client.hset(queue.keys.job(owned), "rjk", "s1")
    assert queue.clean("delayed", grace_ms=0).ids == [plain]
    assert queue.get_state(owned) == "delayed"


# -- bulk retry / promote ----------------------------------------------------


def test_retry_all_moves_each_failed_job_exactly_once(redis_client: Redis, queue: Queue) -> None:
    specs = [("a", {"i": i}, {"priority": 3} if i % 10 == 0 else None) for i in range(3000)]
    ids = queue.add_bulk(specs)
    redis_client.delete(queue.keys.wait, queue.keys.prioritized)
    finish(redis_client, queue, ids, "failed", at=now_ms() - 1000)
    # Failed after retry_all started: left for the next round, not looped on.
    late = queue.add("late")
    finish(redis_client, queue, [late], "failed", at=now_ms() + 60_000)
    redis_client.delete(queue.keys.events)

    assert queue.retry_all(batch=700).count == 3000

    wait_ids = [i.decode() for i in redis_client.lrange(queue.keys.wait, 0, -1)]
    prio_ids = [i.decode() for i in redis_client.zrange(queue.keys.prioritized, 0, -1)]
    assert len(wait_ids) == len(set(wait_ids)) == 2700
    assert sorted(wait_ids + prio_ids, key=int) == ids
    assert redis_client.zrange(queue.keys.failed, 0, -1) == [late.encode()]
    waiting = [e for e in events(redis_client, queue) if e["event"] == "waiting"]
    assert len(waiting) == 3000
    assert {e["prev"] for e in waiting} == {"failed"}
    assert redis_client.hget(queue.keys.job(ids[0]), "failedReason") is None


def test_retry_all_walks_the_lists_once_however_many_batches_it_runs(
    redis_client: Redis, queue: Queue
) -> None:
    """The search for failed jobs a list holds too (listedJobs-4.lua) reads
    5,000 entries a call: a wait list of 12,000 costs three LRANGEs and the
    empty paused and active lists one each, for 30 batches as for one. In a
    batch, the search would cost a walk of wait per batch, one made longer by
    every batch's own pushes."""
    ids = queue.add_bulk([("a", None, None) for _ in range(3000)])
    finish(redis_client, queue, ids, "failed", at=now_ms() - 1000)
    redis_client.rpush(queue.keys.wait, *(f"w{n}" for n in range(12_000)))
    redis_client.config_resetstat()

    assert queue.retry_all(batch=100).count == 3000

    assert redis_client.info("commandstats")["cmdstat_lrange"]["calls"] == 5


def test_promote_all_leaves_an_id_without_a_hash_and_reports_it(
    redis_client: Redis, queue: Queue
) -> None:
    ids = queue.add_bulk([("a", None, {"delay": 60_000 + i}) for i in range(2500)])
    redis_client.zadd(queue.keys.delayed, {"orphan": 1})
    promoted = queue.promote_all(batch=1000)
    assert promoted.count == 2500
    assert promoted.skipped == {"orphan": SkippedJob("orphan", "missing")}
    assert queue.get_counts("delayed", "wait") == {"delayed": 1, "wait": 2500}
    assert redis_client.lpos(queue.keys.wait, "orphan") is None
    assert redis_client.hget(queue.keys.job(ids[-1]), "delay") == b"0"


def test_retry_all_completed_on_empty_queue(queue: Queue) -> None:
    assert queue.retry_all("completed") == BulkResult()


# -- drain / obliterate ------------------------------------------------------


def test_drain_removes_unstarted_jobs_in_batches(redis_client: Redis, queue: Queue) -> None:
    waiting = queue.add_bulk([("a", None, None)] * 25 + [("p", None, {"priority": 1})] * 5)
    delayed = queue.add("d", opts={"delay": 60_000})
    scheduled = queue.add("s", opts={"delay": 60_000})
    redis_client.hset(queue.keys.job(scheduled), "rjk", "s1")
    running = queue.add("r")
    redis_client.lrem(queue.keys.wait, 1, running)
    redis_client.lpush(queue.keys.active, running)

    queue.drain(batch=7)
    assert queue.get_counts("wait", "prioritized", "delayed", "active") == {
        "wait": 0,
        "prioritized": 0,
        "delayed": 2,
        "active": 1,
    }
    assert not any(redis_client.exists(queue.keys.job(i)) for i in waiting)
    assert last_event(redis_client, queue) == {"event": "drained"}

    queue.drain(delayed=True, batch=7)
    assert redis_client.zrange(queue.keys.delayed, 0, -1) == [scheduled.encode()]
    assert redis_client.exists(queue.keys.job(delayed)) == 0


def test_obliterate_deletes_every_key_of_the_queue(redis_client: Redis, queue: Queue) -> None:
    other = Queue("other", redis_client)
    other.add("keep")
    ids = queue.add_bulk([("a", None, None)] * 20 + [("d", None, {"delay": 5000})] * 5)
    finish(redis_client, queue, ids[:5], "failed", at=1000)
    queue.add_log(ids[0], "x")
    redis_client.zadd(queue.keys.repeat, {"s1": 1})
    redis_client.hset(queue.keys.repeat_scheduler("s1"), "every", "1000")
    activate(redis_client, queue)

    with pytest.raises(JobNotInState):
        queue.obliterate(batch=4)
    queue.obliterate(force=True, batch=4)

    assert redis_client.keys(f"{queue.keys.base}*") == []
    assert other.get_counts("wait") == {"wait": 1}


# -- progress / logs ---------------------------------------------------------


def test_update_progress(redis_client: Redis, queue: Queue) -> None:
    job_id = queue.add("a")
    queue.update_progress(job_id, {"done": 3, "of": 10})
    job = queue.get_job(job_id)
    assert job is not None
    assert job.progress == {"done": 3, "of": 10}
    assert last_event(redis_client, queue) == {
        "event": "progress",
        "jobId": job_id,
        "data": '{"done":3,"of":10}',
    }
    with pytest.raises(JobNotExist):
        queue.update_progress("gone", 5)


def test_add_log_with_keep_and_get_logs(queue: Queue) -> None:
    job_id = queue.add("a")
    assert [queue.add_log(job_id, f"line {i}") for i in range(3)] == [1, 2, 3]
    assert queue.add_log(job_id, "line 3", keep=2) == 2
    assert queue.get_logs(job_id) == (["line 2", "line 3"], 2)
    assert queue.get_logs(job_id, 0, 0) == (["line 2"], 2)
    with pytest.raises(JobNotExist):
        queue.add_log("gone", "x")


# -- cluster -----------------------------------------------------------------


@pytest.mark.cluster
def test_queue_works_on_a_redis_cluster_with_a_hash_tag_prefix(cluster: Redis) -> None:
    queue = Queue("clustered", cluster, prefix="{bull}")
    ids = queue.add_bulk([("a", {"i": i}, None) for i in range(20)])
    later = queue.add("d", opts={"delay": 60_000, "deduplication": {"id": "once"}})
    assert queue.get_counts("wait", "delayed") == {"wait": 20, "delayed": 1}
    assert [j.id for j in queue.get_jobs("wait", 0, 1)] == ids[:-3:-1]
    queue.fail(ids[0], "no")
    assert queue.retry_all(batch=7).count == 1
    assert queue.promote_all().count == 1
    queue.pause()
    assert queue.get_state(later) == "paused"
    queue.obliterate(batch=5)
    assert queue.get_counts() == dict.fromkeys(queue.get_counts(), 0)
    assert not cluster.exists(queue.keys.meta, queue.keys.id, queue.keys.events)
