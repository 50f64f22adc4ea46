"""The general path of a worker's pick-up (includes/pickupGeneral.lua) at its
edges: due delayed jobs promoted or passed over, broken jobs passed over and
reported once, the rate limit's window, the prioritized jobs read by chunks,
deferred failures carried out, and the raw answers. Its own file, so that
``./run.sh mutate --report --before`` tells what the older files killed."""

from __future__ import annotations

import json
from typing import Any

from redis import Redis

from queues.commands.transitions import RateLimit
from queues.keys import QueueKeys
from queues.pickup import decode_answer
from tests.transition_helpers import (
    NOW,
    TOKEN,
    event_names,
    fetch,
    finish,
    lrange,
    pickup_answer,
    seed_job,
    zmembers,
)


def test_a_delayed_job_due_at_the_epoch_is_promoted_and_taken(
    redis_client: Redis, keys: QueueKeys
) -> None:
    """A migration script re-added a reminder to delayed with score 0 (due
    at the epoch, its counter 0): the lowest score there is, long due, so the
    pick-up promotes and takes it like any other due job."""
    seed_job(redis_client, keys, "reminder-7", name="send-reminder")
    redis_client.delete(keys.wait)
    redis_client.zadd(keys.delayed, {"reminder-7": 0})
    got = fetch(redis_client, keys)
    assert (got.job_id, got.next_delayed_due_ms) == ("reminder-7", None)
    assert redis_client.exists(keys.delayed) == 0
    assert event_names(redis_client, keys) == [
        ("waiting", "reminder-7"),
        ("active", "reminder-7"),
    ]


def test_a_due_delayed_id_without_a_hash_is_dropped_and_reported(
    redis_client: Redis, keys: QueueKeys
) -> None:
    """The hash of a delayed reminder was removed (a clean of a job another
    writer had delayed): its id is dropped from delayed, said as missing,
    and the due job behind it still runs."""
    redis_client.zadd(keys.delayed, {"reminder-6": (NOW - 20) * 4096})
    seed_job(redis_client, keys, "reminder-7", state="delayed", due_ms=NOW - 10)
    got = fetch(redis_client, keys)
    assert (got.job_id, [(s.job_id, s.reason) for s in got.broken]) == (
        "reminder-7",
        [("reminder-6", "missing")],
    )
    assert redis_client.exists(keys.delayed) == 0


def test_a_due_delayed_job_whose_priority_is_no_number_stays_delayed_and_is_reported(
    redis_client: Redis, keys: QueueKeys
) -> None:
    """A producer wrote the priority of a due reminder as "high": it cannot
    be placed among the prioritized jobs, so it stays delayed and is named
    with its field, and the due job beside it is promoted and taken."""
    seed_job(redis_client, keys, "reminder-6", state="delayed", due_ms=NOW - 20)
    redis_client.hset(keys.job("reminder-6"), "priority", "high")
    seed_job(redis_client, keys, "reminder-7", state="delayed", due_ms=NOW - 10)
    got = fetch(redis_client, keys)
    assert (got.job_id, [(s.job_id, s.reason) for s in got.broken]) == (
        "reminder-7",
        [("reminder-6", "field:priority")],
    )
    assert zmembers(redis_client, keys.delayed) == ["reminder-6"]


def test_a_rate_limited_queue_at_its_max_promotes_a_due_job_but_takes_nothing(
    redis_client: Redis, keys: QueueKeys
) -> None:
    """Thirty SMS went out in this minute's window of thirty, and a delayed
    one falls due: the pick-up (the general path, to promote it) makes it
    ready and answers the time left in the window, not a 31st send."""
    seed_job(redis_client, keys, "sms-4434", state="delayed", due_ms=NOW - 10, name="send-sms")
    redis_client.set(keys.limiter, "30", px=60_000)
    got = fetch(redis_client, keys, limiter=RateLimit(max=30, duration_ms=60_000))
    assert got.job is None
    assert 55_000 < got.rate_limit_ms <= 60_000
    assert lrange(redis_client, keys.wait) == ["sms-4434"]
    assert redis_client.get(keys.limiter) == b"30"


def test_a_limiter_counter_without_expiry_opens_a_new_window_on_the_general_path(
    redis_client: Redis, keys: QueueKeys
) -> None:
    """A counter of 50 left without expiry (a PERSIST by hand, a restore from
    a dump) would block the queue forever: the pick-up that promotes a due
    SMS drops it, takes the job and starts a fresh window of one."""
    redis_client.set(keys.limiter, "50")
    seed_job(redis_client, keys, "sms-4435", state="delayed", due_ms=NOW - 10, name="send-sms")
    got = fetch(redis_client, keys, limiter=RateLimit(max=2, duration_ms=1_000))
    assert (got.job_id, got.rate_limit_ms) == ("sms-4435", 0)
    assert redis_client.get(keys.limiter) == b"1"
    assert 0 < redis_client.pttl(keys.limiter) <= 1_000


def test_legacy_markers_are_dropped_without_being_reported_as_broken(
    redis_client: Redis, keys: QueueKeys
) -> None:
    """BullMQ 4 left "0:<delay>" markers in wait: the pick-up drops them and
    takes the invoice behind, and reports nothing, since a marker is no job
    (the dashboard would list each one as a job whose hash is gone)."""
    seed_job(redis_client, keys, "inv-2024-1500", name="send-invoice")
    redis_client.rpush(keys.wait, "0:5000", "0:0")
    got = fetch(redis_client, keys)
    assert (got.job_id, got.broken) == ("inv-2024-1500", ())
    assert lrange(redis_client, keys.wait) == []


def test_broken_jobs_in_wait_are_passed_over_once_each_and_the_job_behind_runs(
    redis_client: Redis, keys: QueueKeys
) -> None:
    """At the tail of wait an id whose hash a clean removed, then two
    invoices another writer broke (attempts counters of "x" and
    "several"), then a sound one: the pick-up drops the id, passes over
    each broken invoice once, naming its field, and takes the sound one;
    the next pick-up finds only the two broken ones, names each once more
    and takes nothing, leaving them waiting as they were."""
    seed_job(redis_client, keys, "inv-2024-1500", name="send-invoice")
    seed_job(redis_client, keys, "inv-2024-1501", name="send-invoice", fields={"ats": "several"})
    seed_job(redis_client, keys, "inv-2024-1502", name="send-invoice", fields={"atm": "x"})
    redis_client.delete(keys.wait)
    redis_client.rpush(
        keys.wait, "inv-2024-1500", "inv-2024-1501", "inv-2024-1502", "inv-2024-1499"
    )
    first = fetch(redis_client, keys)
    assert (first.job_id, [(s.job_id, s.reason) for s in first.broken]) == (
        "inv-2024-1500",
        [
            ("inv-2024-1499", "missing"),
            ("inv-2024-1502", "field:atm"),
            ("inv-2024-1501", "field:ats"),
        ],
    )
    second = fetch(redis_client, keys)
    assert (second.job_id, [(s.job_id, s.reason) for s in second.broken]) == (
        None,
        [("inv-2024-1502", "field:atm"), ("inv-2024-1501", "field:ats")],
    )
    assert sorted(lrange(redis_client, keys.wait)) == ["inv-2024-1501", "inv-2024-1502"]
    assert lrange(redis_client, keys.active) == ["inv-2024-1500"]


def test_an_id_in_prioritized_without_a_hash_is_dropped_and_reported(
    redis_client: Redis, keys: QueueKeys
) -> None:
    """The hash of a prioritized refund was removed, its id left behind: the
    pick-up drops the id, says it is missing, and takes the refund behind."""
    seed_job(redis_client, keys, "refund-12", state="prioritized", priority=1, name="refund")
    seed_job(redis_client, keys, "refund-13", state="prioritized", priority=5, name="refund")
    redis_client.delete(keys.job("refund-12"))
    got = fetch(redis_client, keys)
    assert (got.job_id, [(s.job_id, s.reason) for s in got.broken]) == (
        "refund-13",
        [("refund-12", "missing")],
    )
    assert redis_client.exists(keys.prioritized) == 0


def test_prioritized_ids_without_a_hash_past_a_chunk_are_each_dropped_once(
    redis_client: Redis, keys: QueueKeys
) -> None:
    """A crashed clean left 101 prioritized refunds' ids without their
    hashes, ahead of a sound refund: the pick-up reads prioritized in
    chunks of 100, past the first, reports each dropped id once, takes the
    sound refund and leaves prioritized empty."""
    orphans = [f"refund-{n}" for n in range(2000, 2101)]
    redis_client.zadd(
        keys.prioritized, {job_id: 2**32 + rank for rank, job_id in enumerate(orphans, 1)}
    )
    redis_client.set(keys.pc, str(len(orphans)))
    seed_job(redis_client, keys, "refund-2101", state="prioritized", priority=5, name="refund")
    got = fetch(redis_client, keys)
    assert got.job_id == "refund-2101"
    assert [(s.job_id, s.reason) for s in got.broken] == [(o, "missing") for o in orphans]
    assert redis_client.exists(keys.prioritized) == 0


def test_a_deferred_failure_of_a_flow_child_climbs_to_its_parent_in_the_same_pickup(
    redis_client: Redis, keys: QueueKeys
) -> None:
    """A render of a report flow stalled more than allowed and its parent
    fails when a child fails (fpof): the pick-up fails the render, which
    releases the report with the failure deferred, and carries that out
    too, so neither runs and the worker is told nothing is ready."""
    reason = "job stalled more than allowable limit"
    render = keys.job("render-77-3")
    redis_client.hset(keys.job("report-77"), mapping={"name": "build-report", "opts": "{}"})
    redis_client.zadd(keys.waiting_children, {"report-77": NOW - 60_000})
    redis_client.sadd(keys.dependencies("report-77"), render)
    seed_job(
        redis_client,
        keys,
        "render-77-3",
        name="render-page",
        fields={
            "defa": reason,
            "atm": "1",
            "parentKey": keys.job("report-77"),
            "parent": json.dumps({"id": "report-77", "queueKey": "bull:q", "fpof": True}),
        },
    )
    got = fetch(redis_client, keys)
    assert (got.job_id, got.next_delayed_due_ms) == (None, None)
    assert zmembers(redis_client, keys.failed) == ["render-77-3", "report-77"]
    assert redis_client.hget(keys.job("report-77"), "failedReason") == (
        f"child {render} failed".encode()
    )
    assert redis_client.exists(keys.waiting_children, keys.wait, keys.active) == 0


def test_a_general_pickup_leaving_one_prioritized_job_ready_leaves_the_wake_marker(
    redis_client: Redis, keys: QueueKeys
) -> None:
    """A stalled-limit failure deferred at the tail of wait sends the pick-up
    down the general path; it fails that job, takes the invoice behind and,
    with one refund still prioritized, leaves the marker for the workers
    blocked on it."""
    reason = "job stalled more than allowable limit"
    seed_job(redis_client, keys, "inv-2024-1504", fields={"defa": reason, "atm": "1"})
    seed_job(redis_client, keys, "inv-2024-1503", name="send-invoice")
    seed_job(redis_client, keys, "refund-12", state="prioritized", priority=5, name="refund")
    assert fetch(redis_client, keys).job_id == "inv-2024-1503"
    assert zmembers(redis_client, keys.failed) == ["inv-2024-1504"]
    assert redis_client.zscore(keys.marker, "0") == 0


def test_a_broken_prioritized_job_is_reported_and_keeps_its_place(
    redis_client: Redis, keys: QueueKeys
) -> None:
    """Another writer set the attempts made of the first prioritized refund
    to "x": the pick-up names it with its field, leaves it where it is and
    takes the refund behind it."""
    seed_job(redis_client, keys, "refund-12", state="prioritized", priority=1, name="refund")
    seed_job(redis_client, keys, "refund-13", state="prioritized", priority=5, name="refund")
    redis_client.hset(keys.job("refund-12"), "atm", "x")
    got = fetch(redis_client, keys)
    assert (got.job_id, [(s.job_id, s.reason) for s in got.broken]) == (
        "refund-13",
        [("refund-12", "field:atm")],
    )
    assert zmembers(redis_client, keys.prioritized) == ["refund-12"]


def test_the_general_path_answers_exactly_its_documented_replies(
    redis_client: Redis, keys: QueueKeys
) -> None:
    """The raw answers of the general path (a due reminder to promote sends
    every pick-up below down it), as any client of moveToActive reads them:
    {0, 0, ttl, 0, broken} rate limited, {0, 0, 0, 0, broken} paused,
    {fields, id, 0, 0, broken} a job taken, {0, 0, 0, due, broken} nothing
    ready; never a job id, fields, a limit or a due time of 1 that a
    client would obey."""
    limit = RateLimit(max=30, duration_ms=60_000)

    def pickup() -> Any:
        return pickup_answer(redis_client, keys, limit)

    def due_reminder(job_id: str) -> None:
        seed_job(redis_client, keys, job_id, state="delayed", due_ms=NOW - 10, name="remind")

    seed_job(redis_client, keys, "reminder-9", state="delayed", due_ms=NOW + 5_000)
    due_reminder("reminder-1")
    redis_client.set(keys.limiter, "30", px=60_000)
    limited = pickup()
    assert (limited[:2], limited[3:]) == ([0, 0], [0, []])
    redis_client.delete(keys.limiter, keys.wait)
    redis_client.hset(keys.meta, "paused", "1")
    due_reminder("reminder-2")
    assert pickup() == [0, 0, 0, 0, []]
    redis_client.hdel(keys.meta, "paused")
    redis_client.delete(keys.paused)
    due_reminder("reminder-3")
    assert pickup()[1:] == [b"reminder-3", 0, 0, []]
    redis_client.delete(keys.wait)
    redis_client.zadd(keys.delayed, {"reminder-4": (NOW - 10) * 4096})
    assert pickup() == [0, 0, 0, NOW + 5_000, [b"reminder-4", b"missing"]]
    redis_client.delete(keys.delayed)
    redis_client.zadd(keys.delayed, {"reminder-5": (NOW - 10) * 4096})
    assert pickup() == [0, 0, 0, 0, [b"reminder-5", b"missing"]]


def test_the_priority_counter_restarts_only_once_prioritized_is_empty(
    redis_client: Redis, keys: QueueKeys
) -> None:
    """The counter that orders jobs of equal priority is kept while a broken
    refund still sits in prioritized (dropping it would rank later refunds
    ahead of it), and dropped by the pick-up that finds prioritized empty
    (here one promoting nothing but a reminder whose hash is gone)."""
    seed_job(redis_client, keys, "refund-12", state="prioritized", priority=1, name="refund")
    redis_client.hset(keys.job("refund-12"), "atm", "x")
    got = fetch(redis_client, keys)
    assert (got.job_id, [(s.job_id, s.reason) for s in got.broken]) == (
        None,
        [("refund-12", "field:atm")],
    )
    assert redis_client.get(keys.pc) == b"1"
    redis_client.zrem(keys.prioritized, "refund-12")
    redis_client.zadd(keys.delayed, {"reminder-5": (NOW - 10) * 4096})
    got = fetch(redis_client, keys)
    assert [(s.job_id, s.reason) for s in got.broken] == [("reminder-5", "missing")]
    assert redis_client.exists(keys.pc) == 0


def test_a_general_pickup_of_the_last_ready_job_leaves_no_wake_marker(
    redis_client: Redis, keys: QueueKeys
) -> None:
    """A stalled-limit failure deferred at the tail of wait, then the last
    invoice: the pick-up fails the one, takes the other and leaves no
    marker, so no blocked worker wakes to find nothing."""
    reason = "job stalled more than allowable limit"
    seed_job(redis_client, keys, "inv-2024-1504", fields={"defa": reason, "atm": "1"})
    seed_job(redis_client, keys, "inv-2024-1503", name="send-invoice")
    assert fetch(redis_client, keys).job_id == "inv-2024-1503"
    assert zmembers(redis_client, keys.failed) == ["inv-2024-1504"]
    assert redis_client.exists(keys.marker) == 0


def test_a_finish_taking_the_next_job_on_the_general_path_leaves_no_wake_marker(
    redis_client: Redis, keys: QueueKeys
) -> None:
    """A worker finishing an export takes the next job in the same call: it
    will run it itself, so even with a third job ready it leaves the marker
    as it was (absent) on the general path too, here taken for a deferred
    failure at the tail of wait."""
    reason = "job stalled more than allowable limit"
    seed_job(redis_client, keys, "exp-3317", state="active", lock_token=TOKEN)
    seed_job(redis_client, keys, "exp-3320", name="export-csv")
    seed_job(redis_client, keys, "exp-3319", name="export-csv")
    seed_job(redis_client, keys, "exp-3318", fields={"defa": reason, "atm": "1"})
    redis_client.delete(keys.wait)
    redis_client.rpush(keys.wait, "exp-3320", "exp-3319", "exp-3318")
    answer = finish(redis_client, keys, "exp-3317", fetch_next=True)
    assert decode_answer(answer, "moveToFinished").job_id == "exp-3319"
    assert zmembers(redis_client, keys.failed) == ["exp-3318"]
    assert lrange(redis_client, keys.wait) == ["exp-3320"]
    assert redis_client.exists(keys.marker) == 0
