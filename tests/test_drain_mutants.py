"""drain-11.lua at the edge bench/mutate.py's tenth pass (docs/mutation.md)
found its tests silent on: a batch with room for exactly one more job when
the state it drains runs out. Real Redis; jobs added as producers add them."""

from __future__ import annotations

from redis import Redis

from queues import scripts
from queues.commands import admin
from queues.queue import Queue, now_ms
from tests.queue_helpers import stream_events

WELCOME = {"to": "mira.okafor@example.org", "template": "welcome-v3", "locale": "de-DE"}
RESET = {"to": "j.lindqvist@example.com", "template": "password-reset", "locale": "sv-SE"}


def test_a_batch_with_room_for_one_more_job_takes_it_from_the_next_state(
    redis_client: Redis,
) -> None:
    # Four welcome emails wait and three password resets are prioritized; a
    # batch of 5 takes the four, then the first reset with the one job of
    # room left, and says "more". Passing over a state at one job of room
    # would end the drain there: "drained" sent with two resets still queued.
    queue = Queue("emails", redis_client)
    welcomes = queue.add_bulk([("send-welcome", WELCOME, None)] * 4)
    resets = queue.add_bulk([("password-reset", RESET, {"priority": 1})] * 3)

    call = admin.drain(queue.keys, delayed=False, batch=5, now_ms=now_ms())
    assert scripts.run(redis_client, call) == [1, []]
    assert redis_client.zcard(queue.keys.prioritized) == 2
    assert {"event": "drained"} not in stream_events(redis_client, queue)

    assert queue.drain(batch=5) == []
    assert redis_client.zcard(queue.keys.prioritized) == 0
    assert not any(redis_client.exists(queue.keys.job(i)) for i in welcomes + resets)
    assert stream_events(redis_client, queue)[-1] == {"event": "drained"}


def test_a_drain_one_job_a_call_deletes_every_job(redis_client: Redis) -> None:
    # The smallest batch the API takes: one job a call, a call per job.
    queue = Queue("emails", redis_client)
    ids = queue.add_bulk([("send-welcome", WELCOME, None)] * 2)
    ids += queue.add_bulk([("password-reset", RESET, {"priority": 1})])
    assert queue.drain(batch=1) == []
    assert queue.get_counts("wait", "prioritized") == {"wait": 0, "prioritized": 0}
    assert not any(redis_client.exists(queue.keys.job(i)) for i in ids)
