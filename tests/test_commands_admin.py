"""The admin builders, without Redis: each call matches its script's header
(KEYS order, ARGV count) and carries the values the script expects."""

from __future__ import annotations

import json
import re

import pytest

from queues.commands import admin
from queues.job_options import InvalidJobOptions, prepare_job
from queues.keys import QueueKeys
from queues.scripts import SCRIPTS_DIR, ScriptCall

KEYS = QueueKeys("mail", "{bull}")
_HEADER_KEY = re.compile(r"^\s*KEYS\[(\d+)\]\s+(\S+)", re.MULTILINE)
_HEADER_ARG = re.compile(r"^\s*ARGV\[(\d+)\]( and on)?", re.MULTILINE)


def header(script_name: str) -> tuple[dict[int, str], int, bool]:
    """(KEYS index -> the first word naming it, ARGV count, whether the last
    one is "ARGV[n] and on": any number from n, none included) from the Lua header."""
    (path,) = SCRIPTS_DIR.glob(f"{script_name}-*.lua")
    text = path.read_text().split("]]", 1)[0]
    keys = {int(i): name for i, name in _HEADER_KEY.findall(text)}
    args = _HEADER_ARG.findall(text)
    return keys, len(args), bool(args and args[-1][1])


FIXED_SUFFIXES = frozenset(
    [
        "wait",
        "paused",
        "active",
        "prioritized",
        "delayed",
        "completed",
        "failed",
        "waiting-children",
        "meta",
        "id",
        "pc",
        "marker",
        "events",
        "stalled",
        "stalled-check",
        "limiter",
        "repeat",
        "metrics:completed",
        "metrics:completed:data",
        "metrics:failed",
        "metrics:failed:data",
    ]
)

ALL_CALLS: list[ScriptCall] = [
    admin.add_job(KEYS, prepare_job("n", None, None)),
    admin.requeue_job(KEYS, "7", "failed"),
    admin.requeue_jobs(KEYS, "delayed", batch=10),
    admin.requeue_jobs(KEYS, "failed", batch=10, listed={"7": "wait", "8": "active"}),
    admin.listed_jobs(KEYS, "failed", start=(1, 0), budget=10),
    admin.fail_job(KEYS, "7", reason="r", now_ms=5),
    admin.remove_job(KEYS, "7", now_ms=5),
    admin.pause(KEYS, paused=True),
    admin.clean_jobs(KEYS, "completed", cutoff_ms=5, limit=10, now_ms=9),
    admin.clean_jobs(KEYS, "delayed", cutoff_ms=5, limit=10, now_ms=9, listed={"7": "paused"}),
    admin.drain(KEYS, delayed=True, batch=10, now_ms=9),
    admin.obliterate(KEYS, force=False, batch=10, now_ms=9),
    admin.update_progress(KEYS, "7", "50"),
    admin.add_log(KEYS, "7", "line"),
    admin.set_global_concurrency(KEYS, 3),
    admin.set_global_concurrency(KEYS, None),
]


@pytest.mark.parametrize("call", ALL_CALLS, ids=lambda c: c.script.name)
def test_keys_follow_the_header_and_stay_in_the_queue_slot(call: ScriptCall) -> None:
    names, arg_count, variadic = header(call.script.name)
    assert len(names) == len(call.keys)
    if variadic:
        assert len(call.args) >= arg_count - 1
    else:
        assert len(call.args) == arg_count
    for index, key in enumerate(call.keys, start=1):
        assert key.startswith(KEYS.base), "every key shares the queue's hash tag"
        suffix = key.removeprefix(KEYS.base)
        named = names[index]
        # Headers name fixed keys by their suffix; variable ones by a phrase.
        if named in FIXED_SUFFIXES:
            assert suffix == named


def test_add_job_arguments() -> None:
    job = prepare_job(
        "send",
        {"to": "x"},
        {"jobId": "j1", "delay": 10, "lifo": True, "deduplication": {"id": "d", "ttl": 5}},
        now_ms=1234,
    )
    call = admin.add_job(KEYS, job)
    assert call.args == (
        KEYS.base,
        "j1",
        "send",
        '{"to":"x"}',
        json.dumps(
            {"jobId": "j1", "delay": 10, "lifo": True, "de": {"id": "d", "ttl": 5}},
            separators=(",", ":"),
        ),
        1234,
        10,
        0,
        "1",
        "d",
        5,
        "",
        "",
    )


def test_requeue_source_selects_the_first_key() -> None:
    assert admin.requeue_job(KEYS, "7", "completed").keys[0] == KEYS.completed
    assert admin.requeue_job(KEYS, "7", "delayed").args == (KEYS.base, "7", "delayed")
    assert admin.requeue_jobs(KEYS, "failed", batch=5, max_score=99).args[2:] == (5, "99", 0, 0)
    assert admin.requeue_jobs(KEYS, "delayed", batch=5, pass_over=3).args[3:] == ("+inf", 3, 0)
    reporting = admin.requeue_jobs(KEYS, "failed", batch=5, report_reason_bytes=200)
    assert reporting.args[5:] == (200,)
    listed = admin.requeue_jobs(KEYS, "failed", batch=5, listed={"7": "wait", "8": "active"})
    assert listed.args[6:] == ("7", "wait", "8", "active")
    # The sorted-set states a requeued job must not also be in follow the nine.
    assert admin.requeue_job(KEYS, "7", "failed").keys[9:] == (
        KEYS.completed, KEYS.failed, KEYS.delayed, KEYS.waiting_children,
    )  # fmt: skip


def test_clean_key_per_state_and_positive_bounds() -> None:
    assert admin.clean_jobs(KEYS, "wait", cutoff_ms=1, limit=2, now_ms=9).keys[0] == KEYS.wait
    assert (
        admin.clean_jobs(KEYS, "prioritized", cutoff_ms=1, limit=2, now_ms=9).keys[0]
        == KEYS.prioritized
    )
    with pytest.raises(ValueError, match="limit"):
        admin.clean_jobs(KEYS, "failed", cutoff_ms=1, limit=0, now_ms=9)
    with pytest.raises(ValueError, match="batch"):
        admin.requeue_jobs(KEYS, "failed", batch=0)
    with pytest.raises(ValueError, match="pass_over"):
        admin.requeue_jobs(KEYS, "failed", batch=1, pass_over=-1)
    with pytest.raises(ValueError, match="pass_over"):
        admin.clean_jobs(KEYS, "failed", cutoff_ms=1, limit=2, now_ms=9, pass_over=-2)
    with pytest.raises(ValueError, match="batch"):
        admin.drain(KEYS, delayed=False, batch=-1, now_ms=9)


@pytest.mark.parametrize("state", ["active", "waiting-children", "wait"])
def test_requeue_only_from_finished_or_delayed(state: str) -> None:
    with pytest.raises(ValueError, match="not one of"):
        admin.requeue_job(KEYS, "7", state)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="not one of"):
        admin.requeue_jobs(KEYS, state, batch=1)  # type: ignore[arg-type]


def test_the_search_for_listed_jobs_starts_in_a_sorted_set_and_a_list() -> None:
    call = admin.listed_jobs(KEYS, "delayed", start=(2, 40), budget=100)
    assert call.keys == (KEYS.delayed, KEYS.wait, KEYS.paused, KEYS.active)
    assert call.args == (2, 40, 100)
    with pytest.raises(ValueError, match="not one of"):
        admin.listed_jobs(KEYS, "wait", start=(1, 0), budget=1)
    with pytest.raises(ValueError, match="budget"):
        admin.listed_jobs(KEYS, "failed", start=(4, 0), budget=1)


def test_clean_never_touches_active_jobs() -> None:
    with pytest.raises(ValueError, match="not one of"):
        admin.clean_jobs(KEYS, "active", cutoff_ms=1, limit=1, now_ms=9)  # type: ignore[arg-type]


def test_flags_and_log_keep() -> None:
    assert admin.pause(KEYS, paused=False).args == ("resume",)
    assert admin.drain(KEYS, delayed=False, batch=3, now_ms=9).args == (KEYS.base, "0", 3, 9)
    assert admin.obliterate(KEYS, force=True, batch=3, now_ms=9).args == (KEYS.base, 3, "1", 9)
    assert admin.add_log(KEYS, "7", "l", keep=-4).args == ("l", 0)
    assert admin.add_log(KEYS, "7", "l").keys == (KEYS.job("7"), KEYS.logs("7"))


def test_prepare_job_accepts_bounds_and_keeps_backoff_objects() -> None:
    assert prepare_job("n", None, {"priority": 2**21}).priority == 2**21
    assert prepare_job("n", None, {"delay": 2.0}).delay == 2
    backoff = {"backoff": {"type": "exponential", "delay": 5, "jitter": 0.5}}
    assert json.loads(prepare_job("n", None, backoff).opts_json) == backoff


@pytest.mark.parametrize(
    "opts",
    [
        {"priority": -1},
        {"delay": float("inf")},
        {"attempts": True},
        {"parent": {"id": "p"}},
        {"deduplication": "d"},
    ],
)
def test_prepare_job_refuses(opts: dict[str, object]) -> None:
    with pytest.raises(InvalidJobOptions):
        prepare_job("n", None, opts, now_ms=1)


def test_data_must_be_json() -> None:
    with pytest.raises(InvalidJobOptions):
        prepare_job("n", {"x": float("nan")}, None)
    with pytest.raises(InvalidJobOptions):
        prepare_job("n", object(), None)
