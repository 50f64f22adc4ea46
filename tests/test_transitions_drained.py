"""moveToFinished's `drained` event (issue 26): it says the queue has nothing
left to run, so it is not sent while a prioritized job waits, however empty
the wait list and the active list are. Real Redis, the script itself."""

from __future__ import annotations

from redis import Redis

from queues.keys import QueueKeys
from tests.transition_helpers import TOKEN, event_names, finish, seed_job


def test_no_drained_while_a_prioritized_job_waits(redis_client: Redis, keys: QueueKeys) -> None:
    seed_job(
        redis_client,
        keys,
        "inv-5521",
        state="active",
        name="send-invoice",
        data={"invoice": "INV-5521", "customer": "cus_NffrFeUfNV2Hib"},
        lock_token=TOKEN,
    )
    seed_job(
        redis_client,
        keys,
        "vip-88",
        state="prioritized",
        name="send-invoice",
        data={"invoice": "INV-5522", "customer": "cus_Vip00AcmeCorp"},
        priority=1,
    )
    assert redis_client.llen(keys.wait) == redis_client.llen(keys.active) - 1 == 0
    finish(redis_client, keys, "inv-5521", value='{"sent":true}')
    assert event_names(redis_client, keys) == [("completed", "inv-5521")]


def test_drained_once_the_last_prioritized_job_is_done(
    redis_client: Redis, keys: QueueKeys
) -> None:
    seed_job(redis_client, keys, "vip-88", state="prioritized", name="send-invoice", priority=1)
    seed_job(redis_client, keys, "inv-5521", state="active", name="send-invoice", lock_token=TOKEN)
    finish(redis_client, keys, "inv-5521", fetch_next=True)  # takes vip-88 next
    finish(redis_client, keys, "vip-88")
    assert event_names(redis_client, keys)[-2:] == [("completed", "vip-88"), ("drained", None)]
    assert ("drained", None) not in event_names(redis_client, keys)[:-1]
