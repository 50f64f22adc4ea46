"""Fuzzing the live socket: thousands of generated frames, seeded, against a real Redis.

Every frame must end in an answer (``subscribed``, ``error``, events...) or a
close with 4400; never a server error (an exception out of the consumer is
what daphne turns into close code 1011), never an error logged by the live
readers. After each generated frame a sentinel (a subscription with a name
that cannot be a queue: an ``error`` answer, no Redis needed) tells when the
socket has dealt with it.
"""

from __future__ import annotations

import asyncio
import json
import logging
import random
from collections.abc import AsyncIterator
from typing import Any

import pytest
from channels.testing import WebsocketCommunicator
from django.contrib.auth.models import Permission, User
from redis import Redis

from dashboard.live.hub import get_hub
from queues.keys import QueueKeys
from tests.test_live_consumer import connect_as

pytestmark = pytest.mark.django_db(transaction=True)

SEED = 20_240_610
FRAMES = 2000
SENTINEL = {"type": "subscribe", "queues": [{"queue": "bull:not a queue"}]}
SENTINEL_ANSWER = {"type": "error", "queue": "bull:not a queue", "message": "unknown queue"}

SCALARS: list[Any] = [
    None, True, False, 0, -1, 1.5, 1e308, float("inf"), float("nan"), 2**64, -(2**63),
    "", " ", "0", "bull", "bull:", ":", "::", "bull:emails", "bull:emails:", "bull:no-such",
    "{bull}:emails", "bull:a b", "bull:\x00", "bull:\u202e", "é" * 300, "x" * 5000,
]  # fmt: skip
STREAM_IDS: list[Any] = [
    None, "0-0", "0", "1-1", "-1", "1-", "-", "18446744073709551615-18446744073709551615",
    "18446744073709551616-0", "99999999999999999999-99999999999999999999", "1e3-0",
    "\uff11\uff12-0", "1-0 ", " 1-0", "1-0\n", 7, 1.0, [], {},
]  # fmt: skip


def scalar(rng: random.Random) -> Any:
    return rng.choice([*SCALARS, rng.randint(-(2**70), 2**70), rng.random()])


def value(rng: random.Random, depth: int = 0) -> Any:
    """Any JSON value, small and shallow mostly."""
    roll = rng.random()
    if depth > 3 or roll < 0.5:
        return scalar(rng)
    if roll < 0.75:
        return [value(rng, depth + 1) for _ in range(rng.randint(0, 4))]
    return {str(scalar(rng)): value(rng, depth + 1) for _ in range(rng.randint(0, 4))}


def subscription_item(rng: random.Random) -> Any:
    if rng.random() < 0.1:
        return value(rng)
    item: dict[str, Any] = {}
    if rng.random() < 0.9:
        item["queue"] = rng.choice(["bull:emails", "emails", *SCALARS, value(rng)])
    if rng.random() < 0.8:
        item["last_id"] = rng.choice(STREAM_IDS)
    if rng.random() < 0.3:
        item["job"] = rng.choice(["1", "a:b", "", "x" * 300, 7, None, [], value(rng)])
    if rng.random() < 0.3:
        item["bodies"] = rng.choice([True, False, "no", 0, 1, None, value(rng)])
    for _ in range(rng.randint(0, 1)):
        item[str(scalar(rng))] = value(rng)
    return item


def message(rng: random.Random) -> Any:
    roll = rng.random()
    if roll < 0.1:
        return value(rng)
    kind = rng.choices(
        ["subscribe", "unsubscribe", "discover", scalar(rng)], weights=[10, 3, 1, 4]
    )[0]
    result: dict[str, Any] = {"type": kind}
    if rng.random() < 0.9:
        count = rng.choice([0, 1, 1, 2, 3, 10, 501])
        if kind == "unsubscribe" and rng.random() < 0.7:
            result["queues"] = [rng.choice(["bull:emails", *SCALARS]) for _ in range(count)]
        else:
            result["queues"] = [subscription_item(rng) for _ in range(count)]
    else:
        result["queues"] = value(rng)
    return result


def frame(rng: random.Random) -> dict[str, Any]:
    """A frame as the server hands it on: JSON text mostly, else garbage of some kind."""
    roll = rng.random()
    if roll < 0.80:
        return {"text": json.dumps(message(rng))}
    if roll < 0.85:
        depth = rng.choice([10, 1000, 5000, 50_000])
        opener, closer = rng.choice([("[", "]"), ('{"a":', "}")])
        return {"text": opener * depth + "1" + closer * depth}
    if roll < 0.90:
        return {"bytes": rng.randbytes(rng.randint(1, 64))}
    if roll < 0.95:
        text = json.dumps(message(rng))
        cut = rng.randint(0, len(text))
        return {"text": text[:cut] + rng.choice(["", "\x00", "}", "\ud800", "NaN"])}
    return {"text": rng.choice(["", " ", "null", "[]", "{}", "1e400", "-Infinity", '"x"'])}


@pytest.fixture
async def viewer(redis_client: Redis) -> AsyncIterator[User]:
    redis_client.set(QueueKeys("emails").id, 0)
    for n in range(5):
        redis_client.xadd(QueueKeys("emails").events, {"event": "added", "jobId": str(n)})

    def make() -> User:
        user = User.objects.create_user("fuzz", password=None, is_staff=True)
        user.user_permissions.add(Permission.objects.get(codename="view_queues"))
        return user

    yield await asyncio.to_thread(make)
    await get_hub().close()


async def settle(communicator: WebsocketCommunicator) -> int | None:
    """Read until the sentinel's answer (None) or a close (its code)."""
    await communicator.send_json_to(SENTINEL)
    while True:
        output = await communicator.receive_output(timeout=10)
        if output["type"] == "websocket.close":
            return int(output["code"])
        if json.loads(output["text"]) == SENTINEL_ANSWER:
            return None


async def test_thousands_of_generated_frames_get_4400_or_an_answer_never_a_server_error(
    viewer: User, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.ERROR, logger="echomq.live")
    rng = random.Random(SEED)
    communicator = await connect_as(viewer)
    closes = 0
    for number in range(FRAMES):
        sent = frame(rng)
        await communicator.send_input({"type": "websocket.receive", **sent})
        try:
            code = await settle(communicator)
        except Exception as error:
            raise AssertionError(
                f"frame {number} (seed {SEED}) broke the socket: {sent!r:.300}"
            ) from error
        if code is not None:
            assert code == 4400, f"frame {number} (seed {SEED}) closed with {code}: {sent!r:.300}"
            closes += 1
            communicator = await connect_as(viewer)
    await communicator.disconnect()
    assert not [r for r in caplog.records if r.name == "echomq.live"], caplog.text
    assert 0 < closes < FRAMES  # both kinds of answer were exercised
