"""The JSON a job's data and options are stored as: what json.dumps writes, NaN refused."""

from __future__ import annotations

import json
import math
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from queues.job_options import InvalidJobOptions, prepare_job, to_json

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
