"""Counting Django template work: every ``{{ value }}``, filter chain and tag
argument a template resolves is one ``FilterExpression.resolve`` call. A page
whose rows are built in Python (dashboard.shared.presenters, dashboard.flows.html,
dashboard.schedulers.rows) resolves as many whatever its number of rows."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pytest
from django.template.base import FilterExpression


@contextmanager
def counted_lookups(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[int]]:
    """A one-item list holding the resolves made inside the block."""
    count = [0]
    original = FilterExpression.resolve

    def counting(self: FilterExpression, *args: Any, **kwargs: Any) -> Any:
        count[0] += 1
        return original(self, *args, **kwargs)

    with monkeypatch.context() as patch:
        patch.setattr(FilterExpression, "resolve", counting)
        yield count
