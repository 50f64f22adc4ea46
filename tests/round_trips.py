"""Counting round trips: every pipeline, script call or single command a
client sends is one ``send_packed_command`` call."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pytest
from redis.connection import AbstractConnection


@contextmanager
def counted_sends(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[object]]:
    """The sends made inside the block, one entry each."""
    sent: list[object] = []
    original = AbstractConnection.send_packed_command

    def counting(self: AbstractConnection, *args: Any, **kwargs: Any) -> None:
        sent.append(args)
        original(self, *args, **kwargs)

    with monkeypatch.context() as patch:
        patch.setattr(AbstractConnection, "send_packed_command", counting)
        yield sent
