"""releaseJob: the script a worker uses to hand back a job it holds."""

from __future__ import annotations

import re

import pytest
from redis import Redis

from queues import scripts
from queues.commands.release import release_job
from queues.errors import ErrorCode
from queues.keys import QueueKeys
from queues.scripts import SCRIPTS_DIR
from tests.keyspace import snapshot

KEYS = QueueKeys("rel")
TOKEN = "tok"


def _active_job(client: Redis, job_id: str, token: str | None = TOKEN) -> None:
    client.hset(KEYS.job(job_id), mapping={"name": "x", "data": "{}", "opts": "{}", "atm": 1})
    client.lpush(KEYS.active, job_id)
    client.sadd(KEYS.stalled, job_id)
    if token is not None:
        client.set(KEYS.lock(job_id), token, px=30_000)


def _release(client: Redis, job_id: str, token: str = TOKEN) -> object:
    return scripts.run(client, release_job(KEYS, job_id, token=token))


def test_a_held_job_goes_back_to_run_next(redis_client: Redis) -> None:
    redis_client.lpush(KEYS.wait, "older", "newer")  # "older" is at the tail: next to run
    _active_job(redis_client, "7")
    assert _release(redis_client, "7") == 0
    assert redis_client.lrange(KEYS.wait, -1, -1) == [b"7"]  # now "7" runs first
    assert redis_client.llen(KEYS.active) == 0
    assert redis_client.exists(KEYS.lock("7")) == 0
    assert redis_client.sismember(KEYS.stalled, "7") == 0
    assert redis_client.hget(KEYS.job("7"), "atm") == b"1"  # no attempt counted
    assert redis_client.zscore(KEYS.marker, "0") == 0
    ((_id, fields),) = redis_client.xrange(KEYS.events)
    assert fields == {b"event": b"waiting", b"jobId": b"7", b"prev": b"active"}


def test_a_paused_queue_gets_the_job_in_paused_and_no_wake_up(redis_client: Redis) -> None:
    redis_client.hset(KEYS.meta, "paused", 1)
    _active_job(redis_client, "7")
    assert _release(redis_client, "7") == 0
    assert redis_client.lrange(KEYS.paused, 0, -1) == [b"7"]
    assert redis_client.exists(KEYS.marker) == 0


@pytest.mark.parametrize(
    ("setup", "token", "code"),
    [
        ("missing", "tok", ErrorCode.JOB_NOT_EXIST),
        ("no-lock", "tok", ErrorCode.JOB_LOCK_NOT_EXIST),
        ("active", "other", ErrorCode.JOB_LOCK_MISMATCH),
        ("not-active", "tok", ErrorCode.JOB_NOT_IN_STATE),
    ],
)
def test_refusals_change_nothing(redis_client: Redis, setup: str, token: str, code: int) -> None:
    if setup == "no-lock":
        _active_job(redis_client, "7", token=None)
    elif setup == "active":
        _active_job(redis_client, "7")
    elif setup == "not-active":
        _active_job(redis_client, "7")
        redis_client.lrem(KEYS.active, 0, "7")
        redis_client.lpush(KEYS.wait, "7")
    before = snapshot(redis_client)
    assert _release(redis_client, "7", token) == code
    assert snapshot(redis_client) == before


def test_the_header_documents_the_keys_in_the_order_the_builder_passes_them() -> None:
    header = (SCRIPTS_DIR / "releaseJob-8.lua").read_text().split("]]", 1)[0]
    documented = re.findall(r"^\s*KEYS\[\d+\]\s+(\S+)", header, re.MULTILINE)
    passed = release_job(KEYS, "7", token=TOKEN).keys
    assert documented[:7] == [key.removeprefix(KEYS.base) for key in passed[:7]]
    assert (documented[7], passed[7]) == ("job", KEYS.job("7"))
