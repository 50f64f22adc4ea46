"""The JSON a job's fields are stored as: what json.dumps writes, NaN and Infinity
refused by every path that writes one (queues.codec.dumps, the one encoder)."""

from __future__ import annotations

import json
import math
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from redis import Redis

from queues.job import Job
from queues.job_options import InvalidJobOptions, prepare_job, to_json
from queues.queue import Queue
from tests.worker_helpers import running, until

# What job data looks like: JSON's own shapes, with every finite float.
JSON_VALUES = st.recursive(
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(),
    lambda children: (
        st.lists(children, max_size=5) | st.dictionaries(st.text(max_size=8), children, max_size=5)
    ),
    max_leaves=30,
)


def stdlib_json(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"), allow_nan=False)


@settings(max_examples=400, deadline=None)
@given(JSON_VALUES)
def test_any_reader_reads_what_json_dumps_would_have_written(value: Any) -> None:
    """Jobs stored before the encoder changed and after it read the same, by any
    runtime. (The texts may differ in how a control character is escaped:
    ``\\u000F`` for ``\\u000f``.)"""
    text = to_json(value)
    assert json.loads(text, parse_constant=refuse) == json.loads(stdlib_json(value))


def refuse(constant: str) -> None:
    raise AssertionError(f"{constant} is not JSON")


@pytest.mark.parametrize(
    "value",
    [
        {"n": 1, "é": 'x\u2028\x01\n"\\/ 😀'},
        (1, "tuple"),
        {1: "int key", 2.5: "float key"},
        [1e16, 1e-7, -0.0, 5e-324, 0.1 + 0.2, 10**30],
    ],
)
def test_python_shapes_are_written_as_json_dumps_writes_them(value: Any) -> None:
    assert to_json(value) == stdlib_json(value)


@pytest.mark.parametrize("number", [math.nan, math.inf, -math.inf])
@pytest.mark.parametrize(
    "shape",
    [lambda x: x, lambda x: {"a": [1, {"b": x}]}, lambda x: [[[x]]]],
    ids=["alone", "in a dict", "in lists"],
)
def test_nan_and_infinity_are_refused_wherever_they_are(number: float, shape: Any) -> None:
    """JSON has no NaN: some encoders write it as null, which would change the job's data."""
    with pytest.raises(InvalidJobOptions, match="not JSON-serialisable"):
        to_json(shape(number))
    with pytest.raises(InvalidJobOptions):
        prepare_job("n", shape(number), None)
    with pytest.raises(InvalidJobOptions):
        prepare_job("n", None, {"removeOnFail": {"age": shape(number)}})


def test_what_json_cannot_say_is_refused() -> None:
    looped: list[Any] = []
    looped.append(looped)
    deep: list[Any] = []
    for _ in range(100_000):
        deep = [deep]
    for value in [b"bytes", {"a": {1, 2}}, object(), looped, deep, "\ud800"]:
        with pytest.raises(InvalidJobOptions):
            to_json(value)


# Every path that writes a caller's value into a job field, as (queue, job id) -> write.
QUEUE_WRITES = {
    "Queue.add data": lambda q, _id, x: q.add("n", {"amount": x}),
    "Queue.add opts": lambda q, _id, x: q.add("n", None, {"backoff": {"type": "x", "delay": x}}),
    "Queue.update_data": lambda q, job_id, x: q.update_data(job_id, [x]),
    "Queue.update_progress": lambda q, job_id, x: q.update_progress(job_id, x),
}
NOT_JSON = pytest.mark.parametrize(
    "number", [math.nan, math.inf, -math.inf], ids=["NaN", "Infinity", "-Infinity"]
)


@NOT_JSON
@pytest.mark.parametrize("write", QUEUE_WRITES.values(), ids=QUEUE_WRITES.keys())
def test_every_queue_write_of_a_job_field_refuses_what_json_cannot_say(
    redis_client: Redis, number: float, write: Any
) -> None:
    queue = Queue("json-policy", redis_client)
    job_id = queue.add("report", {"rows": 3})
    before = redis_client.hgetall(queue.keys.job(job_id))
    events = redis_client.xlen(queue.keys.events)
    with pytest.raises(InvalidJobOptions, match="not JSON-serialisable"):
        write(queue, job_id, number)
    assert redis_client.hgetall(queue.keys.job(job_id)) == before
    assert redis_client.xlen(queue.keys.events) == events


@NOT_JSON
async def test_a_worker_refuses_progress_json_cannot_say_as_the_queue_does(
    redis_url: str, redis_client: Redis, number: float
) -> None:
    """BullMQ's readers JSON.parse the progress field: "NaN" would throw there."""
    queue = Queue("json-policy", redis_client)
    refused: list[str] = []

    async def report(job: Job) -> None:
        try:
            await worker.update_progress(job, {"done": number})
        except InvalidJobOptions as exc:
            refused.append(str(exc))

    async with running("json-policy", report, url=redis_url) as worker:
        job_id = queue.add("report", {"rows": 3})
        await until(lambda: queue.get_state(job_id) == "completed")
    assert refused
    assert "not JSON-serialisable" in refused[0]
    assert redis_client.hget(queue.keys.job(job_id), "progress") in (None, b"0")
    names = [fields[b"event"] for _, fields in redis_client.xrange(queue.keys.events)]
    assert b"progress" not in names
