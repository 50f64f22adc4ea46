"""Builder for releaseJob: a worker hands an unfinished job back to the queue.

Used by ``Worker.close(force=True)`` (or a close whose timeout ran out): the
job returns to the ready list at the position that runs next, its lock is
dropped and no attempt is counted, so another worker simply starts it again.
"""

from __future__ import annotations

from queues import scripts
from queues.keys import QueueKeys, validate_job_id
from queues.scripts import ScriptCall


def release_job(keys: QueueKeys, job_id: str, *, token: str) -> ScriptCall:
    validate_job_id(job_id)
    if not token:
        raise ValueError("the lock token is required")
    return scripts.call(
        "releaseJob",
        (
            keys.active,
            keys.wait,
            keys.paused,
            keys.meta,
            keys.marker,
            keys.events,
            keys.stalled,
            keys.job(job_id),
        ),
        (job_id, token),
    )
