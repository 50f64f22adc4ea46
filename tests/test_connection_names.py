"""Connection names of workers: BullMQ's scheme both ways (queues.connection_names)."""

from __future__ import annotations

import base64

import pytest

from queues.connection_names import (
    is_settable,
    match_worker,
    queue_name_forms,
    worker_connection_name,
)


def test_a_queue_goes_by_bullmq_5s_base64_name_and_bullmq_2_python_s_plain_name() -> None:
    node_form, python_form = queue_name_forms("bull", "emails")
    assert node_form == "bull:" + base64.b64encode(b"emails").decode()  # bull:ZW1haWxz
    assert python_form == "bull:emails"


def test_our_worker_names_its_connections_as_bullmq_5_does() -> None:
    assert worker_connection_name("bull", "emails", "w1") == "bull:ZW1haWxz:w:w1"
    # Unicode queue names are base64 of their UTF-8: nothing Redis would refuse.
    named = worker_connection_name("bull", "café", "host:42:ab")
    assert named == "bull:Y2Fmw6k=:w:host:42:ab"


@pytest.mark.parametrize("worker", ["two words", "tab\there", "naïve", "line\nbreak"])
def test_a_name_redis_would_refuse_is_none_not_an_error_at_connect(worker: str) -> None:
    assert worker_connection_name("bull", "emails", worker) is None
    assert not is_settable(worker)


def test_a_prefix_redis_would_refuse_leaves_the_worker_unnamed() -> None:
    assert worker_connection_name("bülle", "emails", "w1") is None


def test_named_and_unnamed_workers_of_both_forms_match() -> None:
    bases = frozenset(queue_name_forms("bull", "emails"))
    unnamed = match_worker("bull:ZW1haWxz", bases)
    assert unnamed is not None
    assert (unnamed.base, unnamed.worker) == ("bull:ZW1haWxz", "")
    named = match_worker("bull:emails:w:box-7:w:odd", bases)
    assert named is not None
    assert (named.base, named.worker) == ("bull:emails", "box-7:w:odd")


@pytest.mark.parametrize(
    "name",
    [
        "bull:ZW1haWxz:qe",  # BullMQ's QueueEvents connection
        "bull:ZW1haWxzX",  # only starts like the base
        "bull:ZW1haWxz:wx:w1",
        "bull:ZW1haWxz:",
        "bull:emails-2:w:w1",  # another queue whose name starts the same
        "bull:c2Vjb25k:w:w1",  # another queue's base64
        "other:ZW1haWxz:w:w1",  # another prefix
        ":w:bull:ZW1haWxz",
        "",
    ],
)
def test_names_that_only_look_like_a_workers_are_no_worker(name: str) -> None:
    assert match_worker(name, queue_name_forms("bull", "emails")) is None


def test_a_prefix_holding_the_worker_mark_still_matches() -> None:
    bases = frozenset(queue_name_forms("a:w:b", "q"))
    found = match_worker("a:w:b:cQ==:w:w1", bases)
    assert found is not None
    assert (found.base, found.worker) == ("a:w:b:cQ==", "w1")
