"""How a worker's Redis connections are named, so that CLIENT LIST finds them.

BullMQ 5.x (Node) names every connection of a worker ``CLIENT SETNAME
<prefix>:<base64 of the queue name>``, adding ``:w:<worker name>`` when the
worker has a name; its ``Queue.getWorkers`` takes the connections whose name
is exactly the first form or starts with ``<prefix>:<base64>:w:``. The PyPI
package ``bullmq`` 2.20.1 uses the same scheme with the queue name as it is,
not in base64 (``bull:emails:w:w1``). Our :class:`queues.worker.Worker` names
its connections the Node way. A reader accepts both forms (docs/protocol.md,
"Workers").

Redis takes client names of the characters ``!`` to ``~`` only (no spaces,
nothing outside ASCII); a name that cannot be set is ``None`` here and the
worker keeps its connections unnamed rather than fail to connect.
"""

from __future__ import annotations

import base64
import binascii
import contextlib
import re
from collections.abc import Iterable
from dataclasses import dataclass

WORKER_MARK = ":w:"
# What CLIENT SETNAME accepts (Redis rejects anything else, spaces included).
_SETTABLE = re.compile(r"[!-~]+\Z")


def is_settable(name: str) -> bool:
    return bool(_SETTABLE.match(name))


def queue_name_forms(prefix: str, queue: str) -> tuple[str, str]:
    """The two base names a queue's workers go by: BullMQ 5.x's (base64 of the
    UTF-8 queue name, with padding) and bullmq 2.x Python's (the name as is)."""
    encoded = base64.b64encode(queue.encode()).decode("ascii")
    return f"{prefix}:{encoded}", f"{prefix}:{queue}"


def queue_names_of(connection_name: str, prefix: str) -> list[str]:
    """The queue names a connection name may stand for under ``prefix`` (its
    worker or event-listener suffix dropped): the segment after the prefix as
    it is (bullmq for Python) and, when it is the base64 of UTF-8 text, that
    text (BullMQ 5.x). A segment may read as both: both are returned, and the
    caller keeps the queues that exist. Queue names hold no ':' (nor does
    base64), so the segment ends at the first one after the prefix."""
    head = prefix + ":"
    if not connection_name.startswith(head):
        return []
    segment = connection_name[len(head) :].split(":", 1)[0]
    names = [segment]
    with contextlib.suppress(binascii.Error, UnicodeDecodeError, ValueError):
        decoded = base64.b64decode(segment, validate=True).decode()
        if base64.b64encode(decoded.encode()).decode() == segment:
            names.append(decoded)
    return names


def worker_connection_name(prefix: str, queue: str, worker: str) -> str | None:
    """The name our worker gives its connections, BullMQ 5.x's way; None when
    Redis would refuse it (a prefix or worker name outside ``!``..``~``)."""
    name = queue_name_forms(prefix, queue)[0] + (WORKER_MARK + worker if worker else "")
    return name if is_settable(name) else None


@dataclass(frozen=True, slots=True)
class WorkerName:
    """Which queue (by its base name) a connection name belongs to, and the
    worker's own name ("" for an unnamed worker)."""

    base: str
    worker: str


def match_worker(connection_name: str, bases: Iterable[str] | frozenset[str]) -> WorkerName | None:
    """The worker a connection name stands for, when its base is one of ``bases``.

    As BullMQ matches: the name equals a base (an unnamed worker) or starts
    with ``<base>:w:``. A prefix may itself hold ``:w:``, so every place the
    mark occurs is tried, the leftmost first. Anything else (QueueEvents'
    ``:qe``, a name that only starts like a base) is no worker."""
    wanted = bases if isinstance(bases, frozenset) else frozenset(bases)
    if connection_name in wanted:
        return WorkerName(connection_name, "")
    at = connection_name.find(WORKER_MARK)
    while at > 0:
        if connection_name[:at] in wanted:
            return WorkerName(connection_name[:at], connection_name[at + len(WORKER_MARK) :])
        at = connection_name.find(WORKER_MARK, at + 1)
    return None
