"""Decoding a pick-up answer on the worker's hot path.

moveToActive and moveToFinished-with-fetch-next answer
``{fields, id, rate_limit_ms, next_delayed_due_ms, broken}`` (or a closed
error code). A busy worker decodes one of these per job: the job's fields go
through the one job decoder, whose fast path covers the common case
(``queues.read.decode``).
"""

from __future__ import annotations

from typing import Any

from queues.commands.transitions import Fetched
from queues.errors import decode_skipped, raise_for_code
from queues.read.decode import job_from_pairs

_NOTHING = Fetched(None, None)


def decode_answer(answer: Any, command: str, job_id: str | None = None) -> Fetched:
    """A pick-up answer as a :class:`Fetched`; a closed error code raises."""
    if type(answer) is list and len(answer) >= 4:
        fields, raw_id, limit, due = answer[0], answer[1], answer[2], answer[3]
        # Empty (falsy) in the common case: nothing to decode.
        broken = tuple(decode_skipped(answer[4])) if len(answer) > 4 and answer[4] else ()
        if type(fields) is list and raw_id:
            fetched_id = raw_id.decode() if type(raw_id) is bytes else str(raw_id)
            return Fetched(job_from_pairs(fetched_id, fields), fetched_id, broken=broken)
        due_ms = int(due) if due and int(due) > 0 else None
        return Fetched(None, None, int(limit or 0), due_ms, broken)
    raise_for_code(answer, command, job_id)
    return _NOTHING
