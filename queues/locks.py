"""Locks that nobody holds: a lock key without an expiry.

The dashboard's locks (the history collector's lease, the error groups'
build lock) are redis-py ``Lock``s: SET NX with PX, so a holder that dies
leaves a key that lapses. A key at such a name without an expiry (a hand SET,
another tool, a restore without TTLs), of any type, is held by nobody and
never lapses: every SET NX fails on it, and the feature it guards stops for
every user, for good. Given the expiry a lock of ours carries, it lapses like
one, and the feature resumes.
"""

from __future__ import annotations

import logging

from redis import Redis

log = logging.getLogger(__name__)


def expire_unheld_lock(client: Redis, key: str, expiry_ms: int) -> bool:
    """Call when taking the lock at ``key`` failed: a key there without an
    expiry gets ``expiry_ms`` (logged once, as it happens once per such key).
    True when it had none. Two commands, only after a failed take; a lock
    that is held always has an expiry, and should one be taken between the
    two commands, it only has its expiry set anew, as its holder would."""
    if client.pttl(key) != -1:
        return False
    client.pexpire(key, expiry_ms)
    log.warning(
        "lock %s had no expiry (no holder of ours leaves one so): it lapses in %d s",
        key,
        expiry_ms // 1000,
    )
    return True
