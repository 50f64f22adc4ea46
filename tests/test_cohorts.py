"""What became of an action: every retry and promote keeps the ids it moved
(dashboard/acting/cohort_record.py), and a look says where each one is now
(queues/read/cohorts.py), against a real Redis, with our worker moving the
jobs while the test looks."""

from __future__ import annotations

import asyncio
import json
import zlib
from collections import Counter

import pytest
from redis import Redis

from dashboard.acting import actions
from dashboard.acting.cohort_record import record_cohort
from queues import scripts
from queues.commands import admin
from queues.job import Job
from queues.queue import Queue, now_ms
from queues.read import cohorts
from queues.read.cohorts import (
    GONE,
    KEEP_MS,
    MAX_COHORTS_PER_QUEUE,
    Cohort,
    Unreadable,
    breakdown,
    recent_cohorts,
)
from queues.read.error_folding import RULES_VERSION, fold_field
from queues.read.refs import QueueRef
from queues.read.states import STATES
from tests.dashboard_seed import seed_job
from tests.failure_corpus import KINDS, samples
from tests.worker_helpers import running, until

REF = QueueRef("bull", "emails")
KEYS = REF.keys

pytestmark = pytest.mark.django_db


def _failed(
    client: Redis, count: int, reason: str = "timeout after {n}00 ms on job {n}"
) -> list[str]:
    """``count`` failed jobs (attempts 1), each with its own reason text."""
    ids = []
    for n in range(1, count + 1):
        job_id = str(n)
        fields = {"failedReason": reason.format(n=n)}
        seed_job(client, KEYS, job_id, state="failed", data={"n": n}, fields=fields, score=n)
        ids.append(job_id)
    return ids


def _only_cohort(client: Redis) -> Cohort:
    (cohort,) = recent_cohorts(client, KEYS, now_ms())
    assert isinstance(cohort, Cohort)
    return cohort


def _counts(client: Redis, cohort: Cohort) -> dict[str, int]:
    return {part: len(ids) for part, ids in breakdown(client, KEYS, cohort).parts.items()}


# -- a retried cohort while a worker runs ------------------------------------------------


# The action runs in a thread (the ORM may not run in the event loop), on its own connection.
@pytest.mark.django_db(transaction=True)
async def test_a_retried_cohort_is_counted_right_at_every_look_while_a_worker_runs(
    dashboard_redis: Redis, redis_url: str
) -> None:
    """40 failed jobs retried from the page's code path; the worker then
    completes half (some with removeOnComplete: gone), fails a quarter with a
    reason that folds like their old one and a quarter with another. Every
    look while it runs sums to 40, nothing finished ever goes back, and the
    end is exact."""
    client = dashboard_redis
    total = 40
    for n in range(1, total + 1):
        opts = {"attempts": 1, **({"removeOnComplete": True} if n % 8 == 2 else {})}
        seed_job(client, KEYS, str(n), data={"n": n}, opts=opts)

    async def fail_all(job: Job) -> None:
        raise RuntimeError(f"timeout after {30000 + int(job.id)} ms on job {job.id}")

    async with running("emails", fail_all, url=redis_url, concurrency=4):
        await until(lambda: client.zcard(KEYS.failed) == total)

    ids = [str(n) for n in range(1, total + 1)]
    result = await asyncio.to_thread(actions.job_action, client, REF, "retry", ids, user="oncall")
    assert result.count == total
    cohort = _only_cohort(client)
    assert set(cohort.ids) == set(ids)
    assert cohort.user == "oncall"
    assert cohort.source == "failed"
    assert cohort.reasons == ("timeout after <n> ms on job <n>",)

    async def second_run(job: Job) -> str:
        await asyncio.sleep(0.03)
        n = job.data["n"]
        if n % 4 == 0:
            raise RuntimeError(f"timeout after {n * 7} ms on job {job.id}")  # same, folded
        if n % 4 == 1:
            raise RuntimeError("card declined")
        return "sent"

    looks: list[dict[str, int]] = []
    finished_before = 0
    async with running("emails", second_run, url=redis_url, concurrency=2):
        while True:
            counted = await asyncio.to_thread(_counts, client, cohort)
            looks.append(counted)
            assert sum(counted.values()) == total, counted
            assert set(counted) <= {*STATES, GONE}
            finished = sum(counted.get(part, 0) for part in ("completed", "failed", GONE))
            assert finished >= finished_before, "a finished job went back"
            finished_before = finished
            if finished == total:
                break
            await asyncio.sleep(0.02)
    assert any(0 < look.get("wait", 0) + look.get("active", 0) < total for look in looks), (
        "no look happened while the worker was moving the cohort"
    )
    end = breakdown(client, KEYS, cohort)
    gone = [n for n in range(1, total + 1) if n % 8 == 2]
    completed = [n for n in range(1, total + 1) if n % 4 in (2, 3) and n % 8 != 2]
    assert {part: len(ids) for part, ids in end.parts.items()} == {
        "completed": len(completed),
        "failed": total // 2,
        GONE: len(gone),
    }
    assert sorted(end.parts[GONE], key=int) == [str(n) for n in gone]
    assert sorted(end.failed_same, key=int) == [str(n) for n in range(4, total + 1, 4)]
    assert end.failed_reasons == Counter(
        {"timeout after <n> ms on job <n>": total // 4, "card declined": total // 4}
    )


# -- retry all, promote all ------------------------------------------------------------------


def test_retry_all_records_exactly_the_jobs_it_moved_and_not_a_broken_one(
    dashboard_redis: Redis,
) -> None:
    client = dashboard_redis
    ids = _failed(client, 30)
    client.zadd(KEYS.failed, {"broken": 0})
    client.set(KEYS.job("broken"), "not a hash")
    result = actions.queue_action(client, REF, "retry_all", user="oncall")
    assert result.count == 30
    assert [job.job_id for job in result.skipped] == ["broken"]
    cohort = _only_cohort(client)
    assert sorted(cohort.ids, key=int) == ids
    assert cohort.count == 30
    assert cohort.action == "retry_all"
    assert cohort.source == "failed"
    assert cohort.audit_id is not None
    assert _counts(client, cohort) == {"wait": 30}


def test_retry_all_of_completed_jobs_records_them_from_completed(dashboard_redis: Redis) -> None:
    client = dashboard_redis
    for n in range(1, 6):
        seed_job(client, KEYS, f"c{n}", state="completed")
    actions.queue_action(client, REF, "retry_all", user="oncall", state="completed")
    cohort = _only_cohort(client)
    assert sorted(cohort.ids) == [f"c{n}" for n in range(1, 6)]
    assert cohort.source == "completed"
    assert cohort.reasons == ()


def test_promote_all_records_the_promoted_jobs(dashboard_redis: Redis) -> None:
    client = dashboard_redis
    for n in range(1, 8):
        seed_job(client, KEYS, f"d{n}", state="delayed")
    seed_job(client, KEYS, "w1")  # not delayed: not part of it
    actions.queue_action(client, REF, "promote_all", user="oncall")
    cohort = _only_cohort(client)
    assert sorted(cohort.ids) == [f"d{n}" for n in range(1, 8)]
    assert cohort.source == "delayed"
    assert cohort.action == "promote_all"
    assert _counts(client, cohort) == {"wait": 7}


def test_selected_ids_record_only_the_ones_that_moved_with_their_reasons(
    dashboard_redis: Redis,
) -> None:
    client = dashboard_redis
    _failed(client, 3, reason="card {n} declined")
    seed_job(client, KEYS, "w1")  # waiting: the retry refuses it
    result = actions.job_action(client, REF, "retry", ["1", "2", "w1"], user="oncall")
    assert result.count == 2
    cohort = _only_cohort(client)
    assert cohort.ids == ("1", "2")
    assert cohort.reasons == ("card <n> declined",)
    assert cohort.reason_of == (0, 0)


def test_promote_of_one_job_and_actions_that_move_nothing_back(dashboard_redis: Redis) -> None:
    client = dashboard_redis
    seed_job(client, KEYS, "d1", state="delayed")
    seed_job(client, KEYS, "w1")
    actions.job_action(client, REF, "promote", ["d1"], user="oncall")
    actions.job_action(client, REF, "fail", ["w1"], user="oncall")  # not a cohort action
    actions.job_action(client, REF, "promote", ["w1"], user="oncall")  # refused: nothing moved
    cohort = _only_cohort(client)
    assert cohort.ids == ("d1",)
    assert cohort.action == "promote"


# -- bounds and time ----------------------------------------------------------------------------


def test_a_cohort_tracks_at_most_its_bound_and_says_how_many_moved(
    dashboard_redis: Redis, monkeypatch: pytest.MonkeyPatch
) -> None:
    client = dashboard_redis
    monkeypatch.setattr(actions, "MAX_TRACKED", 7)
    monkeypatch.setattr(cohorts, "MAX_TRACKED", 7)
    _failed(client, 25)
    actions.queue_action(client, REF, "retry_all", user="oncall")
    cohort = _only_cohort(client)
    assert cohort.count == 25
    assert cohort.tracked == 7
    assert cohort.ids == tuple(str(n) for n in range(1, 8))  # the first moved (oldest first)


def test_retry_all_reports_ids_only_until_the_tracked_ones_are_in(dashboard_redis: Redis) -> None:
    client = dashboard_redis
    _failed(client, 23)
    queue = Queue("emails", client)
    moved = queue.retry_all(batch=5, track=7)
    assert moved.count == 23
    assert moved.ids == [str(n) for n in range(1, 8)]
    assert moved.previous_reasons["3"] == "timeout after 300 ms on job 3"
    assert Queue("emails", client).retry_all(batch=5).ids == []  # nothing tracked unless asked


def test_the_script_reports_the_moved_ids_and_their_reasons_only_when_asked(
    dashboard_redis: Redis,
) -> None:
    client = dashboard_redis
    _failed(client, 3, reason="x" * 300 + "{n}")
    silent = scripts.run(client, admin.requeue_jobs(KEYS, "failed", batch=1))
    assert silent[0] == 1
    assert silent[3] == []
    told = scripts.run(client, admin.requeue_jobs(KEYS, "failed", batch=5, report_reason_bytes=4))
    assert told[0] == 2
    assert told[3] == [b"2", b"xxxx", b"3", b"xxxx"]


def test_cohorts_expire_after_a_day_and_a_queue_keeps_the_newest_twenty(
    dashboard_redis: Redis,
) -> None:
    client = dashboard_redis
    now = now_ms()
    made = [
        record_cohort(client, REF, "retry", [str(n)], user="u", at_ms=now + n, source="failed")
        for n in range(MAX_COHORTS_PER_QUEUE + 5)
    ]
    assert all(made)
    assert 0 < client.pttl(KEYS.cohort(made[-1] or "")) <= KEEP_MS
    assert 0 < client.pttl(KEYS.cohort_index()) <= KEEP_MS
    assert client.zcard(KEYS.cohort_index()) == MAX_COHORTS_PER_QUEUE
    listed = recent_cohorts(client, KEYS, now + 100)
    assert [c.id for c in listed] == list(reversed(made))[:MAX_COHORTS_PER_QUEUE]
    # A day later, none is listed even if its key were still there.
    assert recent_cohorts(client, KEYS, now + KEEP_MS + 100) == []


def test_a_cohort_of_a_hundred_thousand_is_stored_compactly(dashboard_redis: Redis) -> None:
    ids = [str(n) for n in range(1, 100_001)]
    reasons = {job_id: f"timeout after {job_id} ms" for job_id in ids}
    cohort_id = record_cohort(
        dashboard_redis,
        REF,
        "retry_all",
        ids,
        user="u",
        at_ms=now_ms(),
        source="failed",
        previous_reasons=reasons,
    )
    assert cohort_id is not None
    assert dashboard_redis.strlen(KEYS.cohort(cohort_id)) < 400_000
    (cohort,) = recent_cohorts(dashboard_redis, KEYS, now_ms())
    assert isinstance(cohort, Cohort)
    assert cohort.tracked == 100_000
    assert _counts(dashboard_redis, cohort) == {GONE: 100_000}


# -- nothing broken gives a 500 -----------------------------------------------------------------


def _stored(client: Redis, cohort_id: str, raw: bytes) -> None:
    client.set(KEYS.cohort(cohort_id), raw)
    client.zadd(KEYS.cohort_index(), {cohort_id: int(cohort_id[:13])})


def _record(**changes: object) -> bytes:
    record = {
        "v": 1,
        "action": "retry",
        "source": "failed",
        "user": "u",
        "at_ms": 1,
        "count": 1,
        "ids": ["1"],
        "reasons": [],
        "reason_of": [],
        "audit_id": None,
        **changes,
    }
    return zlib.compress(json.dumps(record).encode())


@pytest.mark.parametrize(
    ("raw", "problem"),
    [
        (b"not compressed", "not a compressed JSON record"),
        (zlib.compress(b"[1, 2]"), "not a JSON object"),
        (zlib.compress(b"{not json"), "not a compressed JSON record"),
        (_record(ids="1,2"), "its field ids is missing or of the wrong type"),
        (_record(ids=["a:b"]), "not a job id"),
        (_record(ids=[1]), "not all strings"),
        (_record(reasons=["r"], reason_of=[0, 0]), "reasons do not match"),
        (_record(reasons=["r"], reason_of=[3]), "reasons do not match"),
        (_record(at_ms="soon"), "its field at_ms is missing or of the wrong type"),
        (zlib.compress(b" " * (cohorts.MAX_RECORD_BYTES + 10)), "too large"),
    ],
)
def test_a_corrupt_cohort_is_listed_as_unreadable(
    dashboard_redis: Redis, raw: bytes, problem: str
) -> None:
    cohort_id = f"{now_ms():013d}-0000abcd"
    _stored(dashboard_redis, cohort_id, raw)
    (listed,) = recent_cohorts(dashboard_redis, KEYS, now_ms())
    assert isinstance(listed, Unreadable)
    assert problem in listed.problem


def test_keys_of_the_wrong_type_and_odd_members_read_as_nothing(dashboard_redis: Redis) -> None:
    client = dashboard_redis
    cohort_id = f"{now_ms():013d}-0000abcd"
    client.rpush(KEYS.cohort(cohort_id), "x")
    client.zadd(KEYS.cohort_index(), {cohort_id: now_ms(), "not-an-id": now_ms()})
    (listed,) = recent_cohorts(client, KEYS, now_ms())
    assert isinstance(listed, Unreadable)
    assert "not a string" in listed.problem
    client.delete(KEYS.cohort_index())
    client.set(KEYS.cohort_index(), "a string")
    assert recent_cohorts(client, KEYS, now_ms()) == []


def test_a_cohort_index_of_the_wrong_type_is_replaced_by_the_next_action(
    dashboard_redis: Redis, caplog: pytest.LogCaptureFixture
) -> None:
    """A string where the queue's index of cohorts belongs kept every later
    action of the queue from being listed (a warning each), for good."""
    client = dashboard_redis
    _failed(client, 3)
    client.set(KEYS.cohort_index(), "a string")
    for job_id in ("1", "2"):
        actions.job_action(client, REF, "retry", [job_id], user="oncall")
    listed = recent_cohorts(client, KEYS, now_ms())
    assert [cohort.ids for cohort in listed if isinstance(cohort, Cohort)] == [("2",), ("1",)]
    assert client.pttl(KEYS.cohort_index()) > 0
    said = [r.getMessage() for r in caplog.records if "cohort" in r.getMessage()]
    assert said == [f"the cohort index {KEYS.cohort_index()} held a string: replaced by a new one"]


def test_state_keys_of_the_wrong_type_hold_nothing_in_a_look(dashboard_redis: Redis) -> None:
    client = dashboard_redis
    _failed(client, 2)
    actions.queue_action(client, REF, "retry_all", user="oncall")
    client.set(KEYS.active, "garbage")
    client.set(KEYS.completed, "garbage")
    assert _counts(client, _only_cohort(client)) == {"wait": 2}


def test_the_reasons_of_many_selected_jobs_are_read_in_bounded_batches(
    dashboard_redis: Redis,
) -> None:
    client = dashboard_redis
    ids = _failed(client, cohorts.BATCH * 2 + 50)
    reasons = cohorts.previous_reasons(client, KEYS, [*ids, "not:an id"])
    assert len(reasons) == len(ids)
    assert reasons[ids[-1]] == f"timeout after {len(ids)}00 ms on job {len(ids)}"
    actions.job_action(client, REF, "retry", ids, user="oncall")
    cohort = _only_cohort(client)
    assert cohort.tracked == len(ids)
    assert all(index == 0 for index in cohort.reason_of)


def test_reasons_bullmqs_python_port_quoted_fold_as_the_job_page_shows_them(
    dashboard_redis: Redis,
) -> None:
    """bullmq 2.20.1 stores failedReason JSON-quoted: the whole reason folded
    to one quoted value, and the queue page said "had failed with: <str>"."""
    client = dashboard_redis
    _failed(client, 2, reason="first attempt of {n} fails on purpose")
    long_reason = "timeout after 30012 ms calling " + "x" * (cohorts.REASON_BYTES + 100)
    for job_id, reason in (("1", "first attempt of 1 fails on purpose"), ("2", long_reason)):
        client.hset(KEYS.job(job_id), "failedReason", json.dumps(reason))
    actions.job_action(client, REF, "retry", ["1", "2"], user="oncall")
    cohort = _only_cohort(client)
    assert len(cohort.reasons) == 2
    assert cohort.reasons[0] == "first attempt of <n> fails on purpose"
    # Cut to its first REASON_BYTES before its closing quote, and still unquoted.
    assert cohort.reasons[1].startswith("timeout after <n> ms calling x")
    assert "<str>" not in " ".join(cohort.reasons)


# -- "the same reason as before" is the same kind ----------------------------------


@pytest.mark.parametrize("kind", sorted(KINDS))
def test_a_reason_as_the_scripts_report_it_reads_as_the_kind_its_group_shows(kind: str) -> None:
    """Both sides of "failed again with the same reason" get a reason as
    the scripts report it (its first REASON_BYTES) and fold it by the error
    groups' own function: every reason of a kind of tests/failure_corpus.py
    reads as the kind its error group shows."""
    for reason in samples(kind, 40):
        reported = cohorts.reason_prefix(reason.encode())
        assert cohorts.fold_reason(reported) == fold_field(reason.encode())[1]


# Two cohorts of corpus kinds: a cohort keeps at most MAX_REASONS kinds.
HALVES = [sorted(KINDS)[: len(KINDS) // 2], sorted(KINDS)[len(KINDS) // 2 :]]


@pytest.mark.parametrize("names", HALVES, ids=["first half", "second half"])
def test_jobs_failing_again_with_their_kind_count_as_the_same_reason(
    dashboard_redis: Redis, names: list[str]
) -> None:
    """Issue 21: 210 jobs retried failed again with the same kind of reason,
    each with its own ids, and the panel said "30 of them". Two jobs of
    each corpus kind are retried (all at once: the reasons come from the
    bulk script's report); one fails again with another reason of its kind,
    the other with a reason of the next kind."""
    client = dashboard_redis
    reasons = {kind: samples(kind, 4) for kind in names}
    for at, kind in enumerate(names):
        for n in (0, 1):
            fields = {"failedReason": reasons[kind][n]}
            seed_job(client, KEYS, f"{at}-{n}", state="failed", fields=fields, score=at)
    actions.queue_action(client, REF, "retry_all", user="oncall")
    cohort = _only_cohort(client)
    assert len(cohort.reasons) == len(names)
    pipe = client.pipeline()
    for at, kind in enumerate(names):
        other = names[(at + 1) % len(names)]
        for n, reason in ((0, reasons[kind][2]), (1, reasons[other][3])):
            job_id = f"{at}-{n}"
            pipe.lrem(KEYS.wait, 0, job_id).zadd(KEYS.failed, {job_id: at})
            pipe.hset(KEYS.job(job_id), "failedReason", reason)
    pipe.execute()
    counted = breakdown(client, KEYS, cohort)
    assert counted.count("failed") == 2 * len(names)
    assert sorted(counted.failed_same) == sorted(f"{at}-0" for at in range(len(names)))


def test_a_cohort_keeps_one_real_reason_of_each_kind(dashboard_redis: Redis) -> None:
    client = dashboard_redis
    incident = samples("gateway timeout with an order id", 5)
    for n, reason in enumerate(incident):
        seed_job(client, KEYS, str(n), state="failed", fields={"failedReason": reason}, score=n)
    actions.queue_action(client, REF, "retry_all", user="oncall")
    cohort = _only_cohort(client)
    assert cohort.reasons == ("gateway timeout after <n> ms (order ord_<id>)",)
    assert cohort.top_previous_reason == cohort.reasons[0]
    assert cohort.top_previous_sample in incident  # one of the jobs' own


def test_a_cohort_folded_by_older_rules_compares_no_reasons(dashboard_redis: Redis) -> None:
    """A cohort recorded before an upgrade holds kinds folded by other rules:
    compared with the kinds its jobs fail with now, every job would count as
    failing otherwise. It says nothing of reasons instead."""
    client = dashboard_redis
    ids = _failed(client, 3)
    actions.queue_action(client, REF, "retry_all", user="oncall")
    cohort = _only_cohort(client)
    assert cohort.reasons
    record = json.loads(zlib.decompress(client.get(KEYS.cohort(cohort.id))))
    assert record["rules"] == RULES_VERSION
    del record["rules"]
    client.set(KEYS.cohort(cohort.id), zlib.compress(json.dumps(record).encode()))
    older = _only_cohort(client)
    assert older.tracked == len(ids)
    assert older.reasons == ()
    assert older.top_previous_reason == ""
