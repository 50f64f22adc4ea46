"""bench/live_trace.py's arithmetic: self time of nested trace events on the pages' main threads."""

from __future__ import annotations

from typing import Any

import pytest

from bench.live_trace import main_thread_self_times

# One timer-fired flush of the feed on a bench page's main thread, as Chromium
# 141's tracing wrote it (bench/live_trace.py on main 63d476c; ts and dur in
# µs, tdur the thread's CPU time), plus the thread's name and one event of
# another thread of the same renderer, which must not count.
MAIN, IO = 2860, 2871
TRACE: list[dict[str, Any]] = [
    {
        "name": "thread_name",
        "ph": "M",
        "pid": 2860,
        "tid": MAIN,
        "args": {"name": "CrRendererMain"},
    },
    {
        "name": "thread_name",
        "ph": "M",
        "pid": 2860,
        "tid": IO,
        "args": {"name": "Chrome_ChildIOThread"},
    },
    {"name": "RunTask", "ph": "X", "ts": 57515031620, "dur": 300, "tdur": 288},
    {
        "name": "ThreadControllerImpl::RunTask",
        "ph": "X",
        "ts": 57515031625,
        "dur": 280,
        "tdur": 273,
    },
    {"name": "TimerBase::run", "ph": "X", "ts": 57515031627, "dur": 276, "tdur": 270},
    {"name": "TimerFire", "ph": "X", "ts": 57515031631, "dur": 271, "tdur": 267},
    {"name": "AsyncTask Run", "ph": "X", "ts": 57515031645, "dur": 255, "tdur": 252},
    {"name": "v8.callFunction", "ph": "X", "ts": 57515031654, "dur": 242, "tdur": 240},
    {
        "name": "FunctionCall",
        "ph": "X",
        "ts": 57515031656,
        "dur": 229,
        "tdur": 229,
        "args": {"data": {"functionName": "flush", "url": "http://127.0.0.1/static/feed.js"}},
    },
    {
        "name": "BlinkScheduler_PerformMicrotaskCheckpoint",
        "ph": "X",
        "ts": 57515031907,
        "dur": 4,
        "tdur": 4,
    },
]
for event in TRACE[2:]:
    event.update(pid=2860, tid=MAIN)
OTHER_THREAD = {"name": "Receive mojo message", "ph": "X", "ts": 57515031630, "dur": 20, "tdur": 19}


def test_each_event_keeps_its_own_time_and_the_thread_total_is_the_outermost_task() -> None:
    times = main_thread_self_times([*TRACE, dict(OTHER_THREAD, pid=2860, tid=IO)])

    # {name: [count, self ms]}: the trace's µs of thread time, in ms.
    assert times["FunctionCall flush"] == [1, pytest.approx(0.229)]
    assert times["v8.callFunction"] == [1, pytest.approx(0.011)]  # 240 µs less the flush inside
    assert times["TimerFire"] == [1, pytest.approx(0.015)]
    # The microtask checkpoint ran after the timer's task, still inside RunTask.
    assert times["RunTask"] == [1, pytest.approx(0.288 - 0.273 - 0.004)]
    assert times["BlinkScheduler_PerformMicrotaskCheckpoint"] == [1, pytest.approx(0.004)]
    assert "Receive mojo message" not in times
    assert sum(ms for _, ms in times.values()) == pytest.approx(0.288)
