"""Pause and resume (pause-7.lua, the queue page's buttons), pinned where
bench/mutate.py's ninth pass (docs/mutation.md) found their tests silent:
the documented answer, and which resume wakes the workers blocked on the
marker."""

from __future__ import annotations

from redis import Redis

from queues import scripts
from queues.commands import admin
from queues.queue import Queue

WELCOME = {"to": "ana.souza@example.com", "template": "welcome", "locale": "pt-BR"}


def _pause(client: Redis, queue: Queue, *, paused: bool) -> object:
    return scripts.run(client, admin.pause(queue.keys, paused=paused))


def _marker(client: Redis, queue: Queue) -> list[tuple[bytes, float]]:
    return client.zrange(queue.keys.marker, 0, -1, withscores=True)


def test_pause_and_resume_answer_1_when_the_queue_changed_and_0_when_it_already_was_so(
    redis_client: Redis,
) -> None:
    queue = Queue("emails", redis_client)
    queue.add("welcome", WELCOME)
    assert [
        _pause(redis_client, queue, paused=True),
        _pause(redis_client, queue, paused=True),
        _pause(redis_client, queue, paused=False),
        _pause(redis_client, queue, paused=False),
    ] == [1, 0, 1, 0]


def test_resuming_a_queue_holding_only_a_delayed_job_wakes_no_worker_now(
    redis_client: Redis,
) -> None:
    # The nightly digest is due in an hour; nothing is ready. A "0" member
    # would wake every blocked worker at once for nothing.
    queue = Queue("emails", redis_client)
    queue.add("digest", {**WELCOME, "template": "daily-digest"}, opts={"delay": 3_600_000})
    due = redis_client.zscore(queue.keys.marker, "1")
    queue.pause()
    queue.resume()
    assert _marker(redis_client, queue) == [(b"1", due)]


def test_resuming_a_queue_with_one_waiting_job_wakes_the_workers(redis_client: Redis) -> None:
    queue = Queue("emails", redis_client)
    queue.add("welcome", WELCOME)
    queue.pause()
    queue.resume()
    assert _marker(redis_client, queue) == [(b"0", 0.0)]


def test_resuming_a_queue_whose_one_ready_job_is_prioritized_wakes_the_workers(
    redis_client: Redis,
) -> None:
    # A password reset sent with priority 1: prioritized jobs stay in their
    # set while paused, wait stays empty.
    queue = Queue("emails", redis_client)
    queue.add("password-reset", {**WELCOME, "template": "password-reset"}, opts={"priority": 1})
    queue.pause()
    assert redis_client.llen(queue.keys.paused) == 0
    queue.resume()
    assert _marker(redis_client, queue) == [(b"0", 0.0)]
