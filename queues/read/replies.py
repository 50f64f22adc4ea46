"""Reading replies tolerantly: one bad key shows as empty, never fails a page.

Another writer may leave a key of the wrong type (WRONGTYPE); every reader of
the read model goes through these two helpers so such a key reads as nothing.
"""

from __future__ import annotations

from typing import Any

from redis.exceptions import ResponseError


def replies(pipe: Any) -> list[Any]:
    """Pipeline replies with per-command errors read as None."""
    return [None if isinstance(r, Exception) else r for r in pipe.execute(raise_on_error=False)]


def read(command: Any, *args: Any, **kwargs: Any) -> list[Any]:
    """A single list-returning read, tolerant of WRONGTYPE like :func:`replies`."""
    try:
        return list(command(*args, **kwargs) or [])
    except ResponseError:
        return []
