from __future__ import annotations

import pytest

from dashboard.shared.presenters import event_detail


@pytest.mark.parametrize(
    ("fields", "shown"),
    [
        # bullmq's Python port writes the reason JSON-encoded into the event too
        ({"failedReason": '"upstream 503"'}, "upstream 503"),
        ({"failedReason": "Error: boom\n    at handler (x.js:1)"}, "Error: boom"),
        ({"data": "40"}, "progress 40"),
        # retries-exhausted: once a row with no detail at all
        ({"attemptsMade": "3"}, "after 3 attempts"),
        ({"attemptsMade": "1"}, "after 1 attempt"),
        ({"attemptsMade": "many"}, "many"),
    ],
)
def test_event_detail_shows_the_short_readable_line(fields: dict[str, str], shown: str) -> None:
    assert event_detail(fields) == shown
