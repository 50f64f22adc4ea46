from __future__ import annotations

import pytest

from queues.keys import InvalidName, QueueKeys, validate_custom_job_id, validate_job_id


def test_every_key_shares_the_queue_prefix_so_a_hash_tag_keeps_one_slot() -> None:
    keys = QueueKeys("emails", prefix="{bull}")
    assert keys.base == "{bull}:emails:"
    for name in ("wait", "active", "delayed", "events", "meta", "marker", "stalled_check"):
        assert getattr(keys, name).startswith("{bull}:emails:")
    assert keys.lock("42") == "{bull}:emails:42:lock"
    assert keys.state("waiting-children") == "{bull}:emails:waiting-children"
    assert keys.metrics_data("failed") == "{bull}:emails:metrics:failed:data"
    assert keys.deduplication("abc") == "{bull}:emails:de:abc"


@pytest.mark.parametrize("name", ["", "a:b", "has space", "x" * 201, "tab\there"])
def test_queue_names_that_would_break_key_names_are_refused(name: str) -> None:
    with pytest.raises(InvalidName):
        QueueKeys(name)


@pytest.mark.parametrize("job_id", ["", "a:b", "nl\n", "x" * 513])
def test_job_ids_that_would_break_key_names_are_refused(job_id: str) -> None:
    with pytest.raises(InvalidName):
        validate_job_id(job_id)


def test_custom_ids_may_not_look_generated_but_unicode_and_spaces_are_fine() -> None:
    assert validate_custom_job_id("order 42 ✓") == "order 42 ✓"
    with pytest.raises(InvalidName):
        validate_custom_job_id("42")


def test_unknown_state_is_refused() -> None:
    with pytest.raises(InvalidName):
        QueueKeys("q").state("finished")
