"""The schedulers tab's "Run now" and "Remove" (runJobScheduler-11.lua,
removeJobScheduler-7.lua), pinned where bench/mutate.py's ninth pass
(docs/mutation.md) found their tests silent."""

from __future__ import annotations

import pytest
from redis import Redis

from queues.queue import Queue
from queues.schedulers import JobSchedulers, Repeat, SchedulerRefused
from tests.keyspace import snapshot

QUEUE = "billing"
DEFINITION = f"bull:{QUEUE}:repeat:monthly-invoices"


@pytest.fixture
def schedulers(redis_client: Redis) -> JobSchedulers:
    return JobSchedulers(QUEUE, redis_client)


@pytest.mark.parametrize("opts", ["null", "42", '"attempts: 3"', "true"])
def test_run_now_refuses_a_template_whose_options_are_json_but_no_object(
    redis_client: Redis, schedulers: JobSchedulers, opts: str
) -> None:
    # Another writer (or a hand HSET in redis-cli) left options that parse
    # but name no option: the run would be a job whose opts no runtime reads.
    schedulers.upsert(
        "monthly-invoices",
        Repeat(pattern="0 6 1 * *", tz="Europe/Berlin"),
        name="invoice-run",
        data={"cycle": "monthly", "currency": "EUR"},
    )
    redis_client.hset(DEFINITION, "opts", opts)
    before = snapshot(redis_client)
    with pytest.raises(SchedulerRefused, match="not a JSON object"):
        schedulers.run_now("monthly-invoices")
    assert snapshot(redis_client) == before
    assert Queue(QUEUE, redis_client).get_counts("wait") == {"wait": 0}


@pytest.mark.parametrize(("lifo", "taken_first"), [(True, True), (False, False)])
def test_a_run_now_job_joins_the_waiting_jobs_at_the_end_its_template_s_lifo_names(
    redis_client: Redis, schedulers: JobSchedulers, lifo: bool, taken_first: bool
) -> None:
    # A support engineer presses "Run now" on the invoice run while two
    # customers' invoices wait: a lifo template jumps the line, any other
    # waits its turn. Workers take wait's tail, new jobs go to its head.
    queue = Queue(QUEUE, redis_client)
    waiting = [queue.add("invoice", {"customer": c}) for c in ("cus_NffrFeUfNV2Hib", "cus_Ng3kZ")]
    schedulers.upsert(
        "monthly-invoices",
        Repeat(pattern="0 6 1 * *"),
        name="invoice-run",
        data={"cycle": "monthly"},
        opts={"lifo": True} if lifo else {"attempts": 3},
    )
    job_id = schedulers.run_now("monthly-invoices")
    order = [i.decode() for i in redis_client.lrange(queue.keys.wait, 0, -1)]
    assert order == ([*waiting[::-1], job_id] if taken_first else [job_id, *waiting[::-1]])


def test_run_now_wakes_the_workers_blocked_on_the_marker(
    redis_client: Redis, schedulers: JobSchedulers
) -> None:
    # Idle workers block on the marker (BZPOPMIN) until the next run is due,
    # the 1st of next month: a run added now must wake them, not wait a month.
    schedulers.upsert("monthly-invoices", Repeat(pattern="0 6 1 * *"), name="invoice-run", data={})
    marker = f"bull:{QUEUE}:marker"
    assert redis_client.zscore(marker, "0") is None
    schedulers.run_now("monthly-invoices")
    assert redis_client.zscore(marker, "0") == 0


def test_removing_a_legacy_key_without_a_job_id_deletes_its_one_possible_pending_run(
    redis_client: Redis, schedulers: JobSchedulers
) -> None:
    """A repeatable job BullMQ 4 added without a jobId: its key's id part is
    empty, so its run has one possible id, repeat:<md5(name + md5(key))>:<ms>
    (md5sum by hand, as in test_schedulers' legacy test)."""
    key = "nightly-report::::0 3 * * *"
    run_ms = 1_767_236_400_000
    run_id = f"repeat:ddf6ca25d4855159bace205d94da9848:{run_ms}"
    redis_client.zadd(f"bull:{QUEUE}:repeat", {key: run_ms})
    redis_client.hset(
        f"bull:{QUEUE}:{run_id}",
        mapping={"name": "nightly-report", "data": '{"format":"pdf"}', "rjk": key},
    )
    redis_client.zadd(f"bull:{QUEUE}:delayed", {run_id: run_ms * 0x1000})
    removed = schedulers.remove(key)
    assert (removed.existed, removed.pending_job_id) == (True, run_id)
    assert Queue(QUEUE, redis_client).get_job(run_id) is None
    assert redis_client.zcard(f"bull:{QUEUE}:delayed") == 0
