"""Whole numbers someone outside wrote: in a URL or a form, or in a cursor or
page token a page sent back. One parser for all of them.

Strict where Python is not: ``int()`` and ``str.isdigit()`` take "²", "٣",
"1_000", "+7" and " 7 ", and a number Redis or Lua cannot hold goes on to fail
there; each was a 500 (issue 22). What Redis hands back is read by
:mod:`queues.codec` instead, which tolerates anything.
"""

from __future__ import annotations

# The largest integer Lua's doubles (and JavaScript's numbers) hold exactly:
# the default bound, so a number passed into a script means what it says.
EXACT = 2**53 - 1
# Redis's unsigned 64-bit numbers: SCAN cursors, the halves of a stream id.
UNSIGNED_64 = 2**64 - 1


class NotWholeNumber(ValueError):
    """Not ASCII digits, or a number above the bound; the message says which."""


def parse_whole(text: str, highest: int = EXACT) -> int:
    """``text`` as an integer from 0 to ``highest``: ASCII digits only (leading
    zeros allowed), no sign, no blanks, nothing else."""
    if not (text.isascii() and text.isdigit()):
        raise NotWholeNumber(f"{text[:20]!r} is not a whole number")
    too_large = NotWholeNumber(f"{text[:20]} is larger than {highest:,}")
    # By length first: int() of thousands of digits costs, then refuses.
    if len(text.lstrip("0")) > len(str(highest)):
        raise too_large
    number = int(text)
    if number > highest:
        raise too_large
    return number
