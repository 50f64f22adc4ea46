"""Honouring a cancel that a library swallowed.

On Python 3.11, ``asyncio.wait_for`` returns the inner result, and drops the
cancel, when the inner awaitable finished in the same loop step as the cancel
arrived (CPython issue 86296, bpo-42130; 3.12 rewrote ``wait_for``). redis-py
sends every command under ``wait_for`` when the client has a
``socket_timeout``, and its sends finish at once, so a task cancelled while one
of its commands is being sent carries on as if it had not been: a live socket
that daphne cancelled went on subscribing and never let go of its readers, and
a reader told to stop went on reading (both seen in CI, in about half the runs
of the mid-subscribe test).

The cancel is not lost entirely: the task still counts it
(``Task.cancelling()``). Every long-lived loop of the live side calls
:func:`raise_if_cancelled` where it goes round, and the consumer after every
message it handled, so such a task ends at the next of those points.
"""

from __future__ import annotations

import asyncio


def raise_if_cancelled() -> None:
    """Raise CancelledError when this task was asked to stop and is still running."""
    task = asyncio.current_task()
    if task is not None and task.cancelling():
        raise asyncio.CancelledError
