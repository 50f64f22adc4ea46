"""The failures' pace in the health words at the edge bench/mutate.py's
tenth pass (docs/mutation.md) found their tests silent on: whole numbers
from ten a minute, a tenth below it."""

from __future__ import annotations

import pytest

from dashboard.shared.health import Health, queue_health
from tests.test_health import finishes, summary


@pytest.mark.parametrize(
    ("failed", "words"),
    [
        # A card processor timing out: 52 declines in 5 minutes, 10.4 a
        # minute, said whole; 48 (9.6 a minute) keeps its tenth.
        pytest.param(52, "52 failed, last 5 min (10/min now, was 2/min)", id="10.4 a minute"),
        pytest.param(48, "48 failed, last 5 min (9.6/min now, was 2/min)", id="9.6 a minute"),
    ],
)
def test_a_pace_of_ten_a_minute_or_more_is_said_whole_and_below_ten_with_its_tenth(
    failed: int, words: str
) -> None:
    # Completed jobs not kept (removeOnComplete), no metrics: only the failed
    # set's pace tells the trend; 20 failed in the ten minutes before.
    recent = finishes(None, failed, (None, 20), 5.0, "finished jobs")
    assert queue_health(summary(recent, active=4)) == Health("rising", "failures rising", words)
