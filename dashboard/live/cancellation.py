"""Honouring a cancel that a library swallowed: on Python 3.11 ``wait_for``
(under every redis-py command) can drop one (CPython gh-86296), yet the task
still counts it, so the live side's loops check after each turn.
"""

from __future__ import annotations

import asyncio


def raise_if_cancelled() -> None:
    task = asyncio.current_task()
    if task is not None and task.cancelling():
        raise asyncio.CancelledError
