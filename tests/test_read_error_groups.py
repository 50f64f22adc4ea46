"""The error groups index against a real Redis: counts exact against a
brute-force count, kept current as jobs fail, are retried, removed, cleaned
and trimmed without events, safe with two updaters, never broken by bad keys."""

from __future__ import annotations

import json
import threading
import time
from collections import Counter
from typing import Any

import pytest
from bullmq import Job as BullJob
from bullmq import Queue as BullQueue
from bullmq import Worker as BullWorker
from redis import Redis

from queues import errors
from queues.job import Job
from queues.keys import QueueKeys
from queues.queue import Queue
from queues.read import error_groups as eg
from queues.read.error_folding import NO_REASON, REASON_BYTES, fold, group_key
from queues.read.refs import QueueRef
from tests.dashboard_seed import now_ms, seed_failed_bulk, seed_index_of_older_rules, seed_job
from tests.keyspace import snapshot
from tests.worker_helpers import running, until

REF = QueueRef("bull", "q")
KEYS = QueueKeys("q")
REASONS = [
    "timeout after {n} ms on job {n}",
    "connection refused to 10.0.{octet}.{n_octet}:6379",
    "user '{n}' not found",
    "ENOENT: open /var/data/{n}/report.csv",
    "",
]


def fail_job(client: Redis, job_id: str, reason: str, finished: int | None = None) -> None:
    when = finished if finished is not None else now_ms()
    seed_job(
        client,
        KEYS,
        job_id,
        state="failed",
        fields={"failedReason": reason, "finishedOn": when},
        score=when,
    )


def seed_mixed(client: Redis, count: int, *, first: int = 1) -> None:
    base = now_ms() - 100_000
    for n in range(first, first + count):
        reason = REASONS[n % len(REASONS)].format(n=n * 7, octet=n // 256 % 256, n_octet=n % 256)
        fail_job(client, str(n), reason, base + n)


def brute_force(client: Redis, keys: QueueKeys = KEYS) -> Counter[str]:
    """Every failed job's reason read and folded: what the index must say."""
    counted: Counter[str] = Counter()
    for raw in client.zrange(keys.failed, 0, -1):
        reason = client.hget(keys.job(raw.decode()), "failedReason")
        counted[fold(reason.decode() if reason else None)] += 1
    return counted


def shown(client: Redis, ref: QueueRef = REF) -> Counter[str]:
    groups = eg.error_groups(client, ref)
    assert groups.complete
    assert groups.indexed == groups.failed
    return Counter({g.text: g.count for g in groups.groups})


def test_groups_match_a_brute_force_count(redis_client: Redis) -> None:
    seed_mixed(redis_client, 2_345)
    assert shown(redis_client) == brute_force(redis_client)
    assert len(brute_force(redis_client)) == len(REASONS)


def test_a_group_shows_count_first_and_last_seen_and_a_sample(redis_client: Redis) -> None:
    fail_job(redis_client, "1", "timeout after 30012 ms on job 991", 1_000)
    fail_job(redis_client, "2", "timeout after 30401 ms on job 12", 3_000)
    redis_client.hset(KEYS.job("2"), "stacktrace", '["Error: timeout\\n    at run (w.js:1:1)"]')
    (group,) = eg.error_groups(redis_client, REF).groups
    assert group.text == "timeout after <n> ms on job <n>"
    assert group.key == group_key(group.text)
    assert (group.count, group.first_seen, group.last_seen) == (2, 1_000, 3_000)
    # Read newest first: the newest job is the sample, with its stack.
    assert group.sample_job == "2"
    assert group.sample_reason == "timeout after 30401 ms on job 12"
    assert "at run (w.js:1:1)" in group.sample_trace


def test_new_failures_retries_and_removals_are_followed(redis_client: Redis) -> None:
    seed_mixed(redis_client, 50)
    shown(redis_client)
    queue = Queue("q", redis_client)
    fail_job(redis_client, "new-1", "timeout after 1 ms on job 2")
    fail_job(redis_client, "new-2", "a brand new error 5")
    queue.retry("5")
    queue.retry("10")
    queue.remove("11")
    assert shown(redis_client) == brute_force(redis_client)
    assert shown(redis_client)["a brand new error <n>"] == 1


def test_a_job_that_fails_again_moves_to_its_new_group(redis_client: Redis) -> None:
    fail_job(redis_client, "7", "first kind 1", now_ms() - 10_000)
    shown(redis_client)
    Queue("q", redis_client).retry("7")
    fail_job(redis_client, "7", "second kind 2")
    assert shown(redis_client) == Counter({"second kind <n>": 1})


def test_jobs_moving_between_groups_in_one_add_call_are_counted_right(
    redis_client: Redis,
) -> None:
    """One catch-up call (ascending finishedOn): a job counted into a group
    another job then leaves; a group emptied by a job that moves out, then
    started again by a newer one (its sample and first seen are the newer
    job's); a job moving into a group the call counted into already."""
    fail_job(redis_client, "1", "boom 1", 1_000)
    fail_job(redis_client, "2", "alone", 2_000)
    fail_job(redis_client, "9", "solo", 2_500)
    shown(redis_client)
    fail_job(redis_client, "3", "alone", 3_000)  # counted into "alone"
    fail_job(redis_client, "2", "boom 2", 4_000)  # leaves "alone" (3 holds it)
    fail_job(redis_client, "9", "boom 9", 4_500)  # empties "solo"
    fail_job(redis_client, "1", "alone", 5_000)  # leaves "boom" (2 holds it)
    fail_job(redis_client, "8", "solo", 6_000)  # starts "solo" again
    assert shown(redis_client) == brute_force(redis_client)
    groups = {g.text: g for g in eg.error_groups(redis_client, REF).groups}
    assert {text: g.count for text, g in groups.items()} == {
        "alone": 2,
        "boom <n>": 2,
        "solo": 1,
    }
    assert (groups["solo"].sample_job, groups["solo"].first_seen) == ("8", 6_000)
    assert groups["alone"].last_seen == groups["solo"].last_seen - 1_000
    index = eg._Index(KEYS)
    members = {
        text: {raw.decode() for raw in redis_client.zrange(index.group(g.key), 0, -1)}
        for text, g in groups.items()
    }
    assert members == {"alone": {"3", "1"}, "boom <n>": {"2", "9"}, "solo": {"8"}}
    assert redis_client.hget(index.state, "total") == b"5"


def three_kinds_to_add(
    client: Redis, count: int
) -> tuple[eg._Index, str, list[str], list[tuple[str, int, str, str]]]:
    """An empty index, built, and ``count`` failed jobs not in it yet: the
    entries of one add call of them, of three kinds in turn."""
    shown(client)
    seed_failed_bulk(client, KEYS, count)
    index = eg._Index(KEYS)
    gen = client.hget(index.state, "gen").decode()
    failed = client.zrange(KEYS.failed, 0, -1, withscores=True)
    keys = [group_key(f"kind {n % 3}") for n in range(3)]
    entries = [
        (raw.decode(), int(score), keys[n % 3], "{}") for n, (raw, score) in enumerate(failed)
    ]
    return index, gen, keys, entries


def test_an_add_call_sends_its_commands_per_group_not_per_job(redis_client: Redis) -> None:
    """Each job's score in failed is read by one ZMSCORE per call, and the
    counts, samples, first and last seen are read and written once per call:
    a call of 250 jobs of 3 kinds makes a few dozen Redis commands, where a
    command per job cost more Redis CPU than the work it did."""
    index, gen, _, entries = three_kinds_to_add(redis_client, 250)
    before = _command_calls(redis_client)
    assert eg.scripts.run(redis_client, index.add(gen, entries)) == [250, 0]
    made = _command_calls(redis_client) - before
    assert sum(made.values()) < 40, made
    assert made["zscore"] == made["hexists"] == made["hincrby"] - 1 == 0


def _command_calls(client: Redis) -> Counter[str]:
    """Calls so far per command (scripts' included), evalsha aside."""
    stats: Any = client.info("commandstats")
    return Counter(
        {
            name.removeprefix("cmdstat_"): int(value["calls"])
            for name, value in stats.items()
            if name not in ("cmdstat_evalsha", "cmdstat_info")
        }
    )


def test_catching_up_reads_only_what_changed(redis_client: Redis) -> None:
    """After the first build, a look with one new failure and one retry reads
    a handful of job hashes, not the whole failed set."""
    seed_failed_bulk(redis_client, KEYS, 5_000)
    before_build = _hash_reads(redis_client)
    shown(redis_client)
    assert _hash_reads(redis_client) - before_build >= 5_000  # one per job, once
    fail_job(redis_client, "fresh", "boom 1")
    Queue("q", redis_client).retry("17")
    before = _hash_reads(redis_client)
    assert shown(redis_client) == brute_force(redis_client)
    # brute_force reads each job's reason (HGET): counted apart.
    assert _hash_reads(redis_client) - before - redis_client.zcard(KEYS.failed) < 40


def _hash_reads(client: Redis) -> int:
    """HGET and HMGET calls so far (scripts' included)."""
    stats: Any = client.info("commandstats")
    return sum(int(stats.get(f"cmdstat_{c}", {}).get("calls", 0)) for c in ("hget", "hmget"))


def test_clean_and_trims_without_events_are_repaired(redis_client: Redis) -> None:
    seed_mixed(redis_client, 300)
    shown(redis_client)
    # clean emits one "cleaned" event with a count and no ids.
    result = Queue("q", redis_client).clean("failed", 0, limit=40)
    assert result.count == 40
    # removeOnFail trims the oldest without any event.
    for raw in redis_client.zrange(KEYS.failed, 0, 24):
        redis_client.zrem(KEYS.failed, raw)
        redis_client.delete(KEYS.job(raw.decode()))
    assert shown(redis_client) == brute_force(redis_client)
    assert sum(shown(redis_client).values()) == 235


def test_a_lost_events_stream_still_ends_exact(redis_client: Redis) -> None:
    seed_mixed(redis_client, 100)
    shown(redis_client)
    queue = Queue("q", redis_client)
    for job_id in ("40", "41", "77"):
        queue.retry(job_id)
    redis_client.delete(KEYS.events)  # trimmed past the cursor: the ids are gone
    assert shown(redis_client) == brute_force(redis_client)


def test_kinds_beyond_the_kept_groups_count_as_other(
    redis_client: Redis, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(eg, "MAX_GROUPS", 3)
    for n, word in enumerate(["alpha", "beta", "gamma", "delta", "epsilon"]):
        fail_job(redis_client, f"j{n}", f"{word} failed", 1_000 + n)
    groups = eg.error_groups(redis_client, REF)
    # The newest kinds are read first and kept; the two oldest share "other".
    assert {g.text for g in groups.groups if g.key != eg.OTHER} == {
        "epsilon failed",
        "delta failed",
        "gamma failed",
    }
    other = next(g for g in groups.groups if g.key == eg.OTHER)
    assert other.count == 2
    assert other.text == eg.OTHER_TEXT
    assert sum(g.count for g in groups.groups) == 5


def test_two_updaters_at_once_count_each_job_once(redis_client: Redis, redis_url: str) -> None:
    from queues.connection import connect

    seed_mixed(redis_client, 3_000)
    shown(redis_client)
    seed_mixed(redis_client, 3_000, first=10_001)
    Queue("q", redis_client).retry("3")
    clients = [connect(redis_url) for _ in range(3)]
    failures: list[BaseException] = []

    def look(client: Redis) -> None:
        try:
            eg.error_groups(client, REF)
        except BaseException as error:  # reported below
            failures.append(error)

    threads = [threading.Thread(target=look, args=(c,)) for c in clients]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert not failures
    assert shown(redis_client) == brute_force(redis_client)


def test_two_first_builds_at_once_leave_one_exact_index(
    redis_client: Redis, redis_url: str
) -> None:
    from queues.connection import connect

    seed_mixed(redis_client, 4_000)
    results: list[eg.ErrorGroups] = []
    threads = [
        threading.Thread(target=lambda: results.append(eg.error_groups(connect(redis_url), REF)))
        for _ in range(2)
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    # One built; the other either waited its turn or said it was not complete.
    assert any(r.complete for r in results)
    assert shown(redis_client) == brute_force(redis_client)


def test_a_writer_from_before_a_reset_is_refused(redis_client: Redis) -> None:
    fail_job(redis_client, "1", "boom 1")
    shown(redis_client)
    index = eg._Index(KEYS)
    old = redis_client.hget(index.state, "gen").decode()
    eg.scripts.run(redis_client, index.reset())
    added = eg.scripts.run(redis_client, index.add(old, [("1", 1, "k", "{}")]))
    assert added == b"stale"
    assert redis_client.hlen(index.counts) == 0


def test_a_failed_key_of_the_wrong_type_is_a_clear_error(redis_client: Redis) -> None:
    redis_client.set(KEYS.failed, "not a zset")
    with pytest.raises(errors.CorruptKey) as raised:
        eg.error_groups(redis_client, REF)
    assert raised.value.key == KEYS.failed


@pytest.mark.parametrize("part", ["state", "counts", "samples", "jobs", "group:other"])
def test_a_broken_index_key_is_rebuilt(redis_client: Redis, part: str) -> None:
    seed_mixed(redis_client, 30)
    shown(redis_client)
    redis_client.delete(KEYS.error_groups(part))
    redis_client.set(KEYS.error_groups(part), "garbage")
    seed_mixed(redis_client, 5, first=500)
    assert shown(redis_client) == brute_force(redis_client)


def test_a_count_that_is_not_an_integer_is_a_broken_index_rebuilt(redis_client: Redis) -> None:
    """The add script reads the groups' counts once and writes them whole: a
    count no one can add to is refused before any write, and rebuilt."""
    seed_mixed(redis_client, 30)
    shown(redis_client)
    key = group_key(fold(REASONS[0].format(n=7)))
    redis_client.hset(eg._Index(KEYS).counts, key, "garbage")
    seed_mixed(redis_client, 5, first=500)  # job 500 is of that kind
    assert shown(redis_client) == brute_force(redis_client)


@pytest.mark.parametrize("broken", ["group count", "total"])
def test_a_drop_meeting_a_count_that_is_not_an_integer_refuses_before_any_write(
    redis_client: Redis, broken: str
) -> None:
    """dropFromErrorGroups took the job out of its group's zset and the jobs
    hash, then failed on HINCRBY of a garbage count: the index was left half
    written. It checks the counts first now, and refuses as the add script
    does (a WRONGTYPE naming the hash), on which the next look rebuilds."""
    fail_job(redis_client, "1", "boom 1", 5_000)
    fail_job(redis_client, "2", "boom 2", 6_000)
    shown(redis_client)
    index = eg._Index(KEYS)
    generation = redis_client.hget(index.state, "gen").decode()
    redis_client.zrem(KEYS.failed, "1")  # it left failed: the drop takes it out
    if broken == "total":
        key, words = index.state, "hash whose total is not an integer"
        redis_client.hset(index.state, "total", "garbage")
    else:
        group = group_key("boom <n>")
        key, words = index.counts, f"hash whose count of {group} is not an integer"
        redis_client.hset(index.counts, group, "garbage")
    before = snapshot(redis_client)
    with pytest.raises(errors.CorruptKey) as refused:
        eg.scripts.run(redis_client, index.drop(generation, ["1"], "99999999999999-0"))
    assert refused.value.key == key
    assert refused.value.actual == words
    assert snapshot(redis_client) == before
    # The page's next look rebuilds the index, exact.
    assert shown(redis_client) == brute_force(redis_client) == Counter({"boom <n>": 1})


def test_an_add_meeting_a_total_that_is_not_an_integer_refuses_before_any_write(
    redis_client: Redis,
) -> None:
    """The add script checked the groups' counts but HINCRBY'd the total last,
    after all its writes."""
    fail_job(redis_client, "1", "boom 1", 5_000)
    shown(redis_client)
    fail_job(redis_client, "2", "boom 2", 6_000)
    index = eg._Index(KEYS)
    generation = redis_client.hget(index.state, "gen").decode()
    redis_client.hset(index.state, "total", "1.5")
    before = snapshot(redis_client)
    with pytest.raises(errors.CorruptKey) as refused:
        eg.scripts.run(
            redis_client, index.add(generation, [("2", 6_000, group_key("boom <n>"), "{}")])
        )
    assert refused.value.key == index.state
    assert snapshot(redis_client) == before
    assert shown(redis_client) == brute_force(redis_client)


def test_the_first_count_reads_each_reason_cut_to_what_folding_reads(
    redis_client: Redis,
) -> None:
    """failedReasons answered whole reasons: 500 of a megabyte were one reply
    of 500 MB, to be folded from their first few KB."""
    megabyte = "x" * 1_000_000
    for n in range(3):
        fail_job(redis_client, str(n), f"timeout {n} {megabyte}", 5_000 + n)
    fail_job(redis_client, "short", "boom", 4_000)
    answer = eg._newest_failures(redis_client, eg._Index(KEYS), float("inf"), 0)
    assert [(job_id, len(reason)) for job_id, _, reason in answer] == [
        ("2", REASON_BYTES),
        ("1", REASON_BYTES),
        ("0", REASON_BYTES),
        ("short", 4),
    ]
    assert answer[0][2] == f"timeout 2 {megabyte}".encode()[:REASON_BYTES]
    assert REASON_BYTES < 10_000


def test_a_huge_reason_groups_alike_read_whole_or_cut(redis_client: Redis) -> None:
    """The first count reads reasons cut (the script), a catch-up reads them
    whole (HGET): both fold the same bytes, so a kind of failure is one
    group whichever way its jobs were read; a JSON-quoted reason (bullmq's
    Python port) cut mid-escape still folds as its decoded text."""
    tail = "é" * 300_000
    fail_job(redis_client, "1", f"timeout 1 {'x' * 1_000_000}", 5_000)
    fail_job(redis_client, "2", json.dumps(f"card 2 declined {tail}"), 5_001)
    before = shown(redis_client)  # built: the script's cut reasons
    fail_job(redis_client, "3", f"timeout 3 {'x' * 1_000_000}")  # caught up: read whole
    fail_job(redis_client, "4", json.dumps(f"card 4 declined {tail}"))
    after = shown(redis_client)
    # Folded from their decoded text, as the job page shows them.
    assert after == Counter(
        {fold(f"timeout 1 {'x' * 1_000_000}"): 2, fold(f"card 2 declined {tail}"): 2}
    )
    assert set(after) == set(before)


def test_missing_hashes_and_binary_reasons_are_grouped(redis_client: Redis) -> None:
    fail_job(redis_client, "1", "boom 1")
    redis_client.zadd(KEYS.failed, {"gone": now_ms()})  # listed, hash gone
    seed_job(redis_client, KEYS, "bin", state="failed", fields={"failedReason": b"\xff\xfe bad 9"})
    redis_client.hset(KEYS.job("1"), "stacktrace", "not json")
    texts = shown(redis_client)
    assert texts[NO_REASON] == 1
    assert texts["\ufffd\ufffd bad <n>"] == 1
    assert texts["boom <n>"] == 1


def test_a_group_lists_its_jobs_newest_first(redis_client: Redis) -> None:
    for n in range(1, 6):
        fail_job(redis_client, str(n), f"boom {n}", 1_000 + n)
    key = group_key("boom <n>")
    eg.error_groups(redis_client, REF)
    assert eg.group_job_ids(redis_client, REF, key, start=0, size=3) == ["5", "4", "3"]
    assert eg.group_count(redis_client, REF, key) == 5


async def test_failures_of_our_worker_and_retries_are_followed(
    redis_client: Redis, redis_url: str
) -> None:
    queue = Queue("q", redis_client)
    ids = [queue.add("task", {"n": n}) for n in range(6)]

    async def process(job: Job) -> None:
        raise RuntimeError(f"timeout after {job.data['n'] * 1000 + 7} ms on job {job.id}")

    async with running("q", process, url=redis_url):
        await until(lambda: redis_client.zcard(KEYS.failed) == 6)
    assert shown(redis_client) == Counter({"timeout after <n> ms on job <n>": 6})
    queue.retry(ids[0])
    queue.retry(ids[1])
    assert shown(redis_client) == Counter({"timeout after <n> ms on job <n>": 4})


@pytest.mark.peer
async def test_failures_of_a_bullmq_worker_are_grouped_and_followed(
    redis_client: Redis, redis_url: str
) -> None:
    peer = BullQueue("q", {"connection": redis_url})
    try:
        for n in range(5):
            await peer.add("task", {"n": n}, {"attempts": 1})
        shown(redis_client)  # built before the failures: they are caught up

        async def process(job: Any, token: str) -> None:
            raise ValueError(f"user '{job.data['n']}' not found in shard {job.data['n'] % 2}")

        worker = BullWorker("q", process, {"connection": redis_url, "drainDelay": 1})
        try:
            await until(lambda: redis_client.zcard(KEYS.failed) == 5)
        finally:
            await worker.close()
        assert shown(redis_client) == Counter({"user <str> not found in shard <n>": 5})
        # Retried by BullMQ itself ("waiting" event with prev "failed").
        oldest = redis_client.zrange(KEYS.failed, 0, 0)[0].decode()
        job = await BullJob.fromId(peer, oldest)
        await job.retry("failed")
        assert shown(redis_client) == Counter({"user <str> not found in shard <n>": 4})
    finally:
        await peer.close()


def test_a_retry_under_a_look_is_not_lost(redis_client: Redis) -> None:
    """Jobs retried while a look is catching up are dropped by that look or
    the next: the totals settle without a rebuild."""
    seed_mixed(redis_client, 500)
    shown(redis_client)
    queue = Queue("q", redis_client)
    done = threading.Event()

    def retry_some() -> None:
        for n in range(100, 140):
            queue.retry(str(n))
        done.set()

    worker = threading.Thread(target=retry_some)
    worker.start()
    while not done.is_set():
        eg.error_groups(redis_client, REF)
    worker.join()
    assert shown(redis_client) == brute_force(redis_client)


def test_a_job_read_before_it_was_retried_is_not_counted(redis_client: Redis) -> None:
    """The add script checks each job is still failed with the finishedOn it
    was read with: a look that read a job just before a retry counts nothing,
    and the same job added twice (two looks) counts once."""
    fail_job(redis_client, "1", "boom 1", 5_000)
    fail_job(redis_client, "2", "boom 2", 6_000)
    shown(redis_client)
    index = eg._Index(KEYS)
    gen = redis_client.hget(index.state, "gen").decode()
    Queue("q", redis_client).retry("1")
    key = group_key("boom <n>")
    answer = eg.scripts.run(
        redis_client, index.add(gen, [("1", 5_000, key, "{}"), ("2", 6_000, key, "{}")])
    )
    assert answer == [0, 2]
    assert redis_client.hget(index.counts, key) == b"2"  # job 1 not dropped yet, 2 once
    assert shown(redis_client) == Counter({"boom <n>": 1})


def test_a_job_given_twice_in_one_add_call_counts_once(redis_client: Redis) -> None:
    """The add script reads each job's group once, before the call: a job
    that comes again later in the same call must find what the call wrote."""
    fail_job(redis_client, "1", "boom 1", 5_000)
    shown(redis_client)
    fail_job(redis_client, "2", "boom 2", 6_000)
    index = eg._Index(KEYS)
    gen = redis_client.hget(index.state, "gen").decode()
    boom, other = group_key("boom <n>"), group_key("something else")
    answer = eg.scripts.run(
        redis_client,
        index.add(
            gen, [("2", 6_000, boom, "{}"), ("2", 6_000, other, "{}"), ("2", 6_000, boom, "{}")]
        ),
    )
    assert answer == [1, 2]
    assert redis_client.hget(index.jobs, "2") == boom.encode()
    assert redis_client.hgetall(index.counts) == {boom.encode(): b"2"}
    assert shown(redis_client) == Counter({"boom <n>": 2})


def test_the_first_count_reads_past_ties_between_batches(
    redis_client: Redis, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Batches are read newest first by score; jobs that failed in the same
    millisecond may straddle two batches and are each counted once."""
    monkeypatch.setattr(eg, "BATCH", 3)
    for n in range(10):
        fail_job(redis_client, f"t{n}", f"tie {n}", 7_000 if n < 7 else 7_000 - n)
    fail_job(redis_client, "gone", "never read", 8_000)
    redis_client.delete(KEYS.job("gone"))  # listed in failed, its hash gone
    assert shown(redis_client) == Counter({"tie <n>": 10, NO_REASON: 1})
    assert redis_client.hlen(eg._Index(KEYS).jobs) == 11


def test_the_build_lock_is_held_through_a_build_longer_than_it(
    redis_client: Redis, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The lock is renewed (when a quarter of it is gone, not per batch):
    another dashboard never finds it free while one build runs."""
    monkeypatch.setattr(eg, "BUILD_LOCK_MS", 400)
    monkeypatch.setattr(eg, "BATCH", 10)
    seed_mixed(redis_client, 200)
    lock_key = eg._Index(KEYS).lock
    held: list[bool] = []
    add = eg._add_failures

    def slow_add(*args: Any) -> bool:
        time.sleep(0.05)  # 20 batches: the build takes about 1 s
        held.append(bool(redis_client.exists(lock_key)))
        return add(*args)

    monkeypatch.setattr(eg, "_add_failures", slow_add)
    assert shown(redis_client) == brute_force(redis_client)
    assert len(held) == 20
    assert all(held)
    assert not redis_client.exists(lock_key)  # released at the end


def test_a_build_lock_nobody_holds_lapses_and_the_groups_are_built(
    redis_client: Redis, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A build lock left without an expiry (a hand SET, a restore) was held by
    nobody and never taken again: the queue's groups stayed empty, "building",
    for every viewer, for good. It now lapses as a lock of ours would."""
    monkeypatch.setattr(eg, "BUILD_LOCK_MS", 300)
    seed_mixed(redis_client, 20)
    lock_key = eg._Index(KEYS).lock
    redis_client.set(lock_key, "left over")
    assert eg.error_groups(redis_client, REF).indexed == 0
    assert 0 < redis_client.pttl(lock_key) <= 300
    time.sleep(0.35)
    assert shown(redis_client) == brute_force(redis_client)


def test_one_add_call_of_thousands_of_jobs_counts_each(redis_client: Redis) -> None:
    """The add script sends its writes per group; a call larger than one
    Lua unpack takes (a few thousand values) sends them in parts."""
    index, gen, keys, entries = three_kinds_to_add(redis_client, 5_000)
    assert eg.scripts.run(redis_client, index.add(gen, entries)) == [5_000, 0]
    assert {k.decode(): int(v) for k, v in redis_client.hgetall(index.counts).items()} == {
        keys[0]: 1_667,
        keys[1]: 1_667,
        keys[2]: 1_666,
    }
    assert redis_client.hlen(index.jobs) == 5_000
    assert redis_client.zcard(index.group(keys[0])) == 1_667
    assert redis_client.hget(index.state, "total") == b"5000"
    # The same jobs again, each now under another group: all counted
    # already at that finishedOn (each job's group is read in parts too).
    again = [
        (job_id, score, keys[(n + 1) % 3], "{}") for n, (job_id, score, _, _) in enumerate(entries)
    ]
    assert eg.scripts.run(redis_client, index.add(gen, again)) == [0, 5_000]
    assert redis_client.hget(index.state, "total") == b"5000"
    assert redis_client.zcard(index.group(keys[0])) == 1_667


# -- the rules changed -------------------------------------------------------------


def _incident(client: Redis, count: int) -> list[str]:
    """Jobs failed as in issue 21: a prefixed order id per reason."""
    base = now_ms() - 60_000
    for n in range(1, count + 1):
        fail_job(
            client,
            str(n),
            f"gateway timeout after {30_000 + n * 37} ms (order ord_{n * 7919:010x})",
            base + n,
        )
    return [str(n) for n in range(1, count + 1)]


def _counted_again(client: Redis, ref: QueueRef = REF) -> eg.ErrorGroups:
    deadline = time.monotonic() + 20
    while not (looked := eg.error_groups(client, ref)).complete:
        assert time.monotonic() < deadline, "the index was not counted again"
        time.sleep(0.05)
    return looked


def test_an_index_counted_by_older_rules_is_counted_again_in_the_background(
    redis_client: Redis,
) -> None:
    seed_index_of_older_rules(redis_client, REF, _incident(redis_client, 30))
    looked = eg.error_groups(redis_client, REF)
    # The look does not wait: the groups as they were, marked as regrouping.
    assert looked.regrouping
    assert looked.old_rules
    assert not looked.complete
    assert len(looked.groups) == 30
    assert looked.as_json().regrouping is True

    regrouped = _counted_again(redis_client)
    assert not regrouped.regrouping
    assert [(g.text, g.count) for g in regrouped.groups] == [
        ("gateway timeout after <n> ms (order ord_<id>)", 30)
    ]
    state = eg._Index(KEYS).state
    assert redis_client.hget(state, "rules") == str(eg.RULES_VERSION).encode()
    assert shown(redis_client) == brute_force(redis_client)


def test_an_index_counted_by_newer_rules_is_shown_and_left_alone(redis_client: Redis) -> None:
    """A newer dashboard beside this one (a rolling deploy): this one must
    neither count the index again with its older rules nor write into it."""
    _incident(redis_client, 5)
    shown(redis_client)
    index = eg._Index(KEYS)
    redis_client.hset(index.state, "rules", eg.RULES_VERSION + 1)
    generation = redis_client.hget(index.state, "gen")
    fail_job(redis_client, "new", "card declined")
    looked = eg.error_groups(redis_client, REF)
    assert not looked.complete
    assert not looked.regrouping
    assert looked.indexed == 5
    time.sleep(0.2)
    assert redis_client.hget(index.state, "gen") == generation
    assert redis_client.hget(index.jobs, "new") is None


def test_a_regrouping_left_half_done_is_taken_up_again(redis_client: Redis) -> None:
    """The dashboard that was counting again stopped (a restart): the index
    is reset, marked as regrouping, not built; the next look goes on in the
    background and says regrouping meanwhile."""
    _incident(redis_client, 12)
    index = eg._Index(KEYS)
    eg.scripts.run(redis_client, index.reset(regroup=True))
    looked = eg.error_groups(redis_client, REF)
    assert looked.regrouping
    assert not looked.old_rules  # what it shows is counted by these rules
    assert not looked.complete
    assert [(g.text, g.count) for g in _counted_again(redis_client).groups] == [
        ("gateway timeout after <n> ms (order ord_<id>)", 12)
    ]
