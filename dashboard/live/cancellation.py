"""Honouring a cancel that a library swallowed.

On Python 3.11 ``asyncio.wait_for`` drops a cancel that arrives in the loop
step its inner awaitable finished in (CPython gh-86296), and redis-py sends
every command under ``wait_for``: a live socket daphne cancelled went on
subscribing, and a stopped reader went on reading (seen in CI). The task
still counts the cancel (``Task.cancelling()``), so every long-lived loop of
the live side calls :func:`raise_if_cancelled` as it goes round, and the
consumer after each message.
"""

from __future__ import annotations

import asyncio


def raise_if_cancelled() -> None:
    """Raise CancelledError when this task was asked to stop and is still running."""
    task = asyncio.current_task()
    if task is not None and task.cancelling():
        raise asyncio.CancelledError
