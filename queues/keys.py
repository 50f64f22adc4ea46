"""Every Redis key name EchoMQ touches is built here and nowhere else.

A queue's keys all start with ``<prefix>:<queue>:``. When the prefix carries a
Redis Cluster hash tag (``{bull}``) every key of the queue hashes to one slot,
which is what lets each transition script run atomically on a cluster.
"""

from __future__ import annotations

import re

from queues.read.states import KEY_STATE

DEFAULT_PREFIX = "bull"
# The dashboard's own keys of a queue start <prefix>:<queue>:<this>:.
ERROR_GROUPS_SEGMENT = "dashboard-error-groups"

# Queue names end up inside key names and Channels group names, so they are
# limited to printable characters without ':' (the key separator) or spaces.
_QUEUE_NAME = re.compile(r"^[^\s:{}\x00-\x1f\x7f]{1,200}$")
_PREFIX = re.compile(r"^[^\s\x00-\x1f\x7f]{1,100}$")
_INTEGER = re.compile(r"^-?\d+$")
MAX_JOB_ID_LENGTH = 512
# Printable, without ':' (the key separator) or half characters (lone
# surrogates, which JSON lets through but UTF-8 cannot encode); \Z so a
# trailing newline fails too.
_JOB_ID = re.compile(rf"[^:\x00-\x1f\x7f\ud800-\udfff]{{1,{MAX_JOB_ID_LENGTH}}}\Z")
# The one kind of id with ':' in it: a job scheduler's run, which BullMQ (and
# queues.schedulers) names repeat:<scheduler id>:<run time in ms>; a
# scheduler id may hold ':' itself. Only ever built by the scheduler scripts,
# so a custom id still cannot take this form (validate_custom_job_id).
_SCHEDULER_RUN_ID = re.compile(r"repeat:[^\x00-\x1f\x7f\ud800-\udfff]+:\d{1,16}\Z")


class InvalidName(ValueError):
    """A queue name, prefix or job id that must not become part of a key."""


def validate_queue_name(name: str) -> str:
    if not _QUEUE_NAME.match(name):
        raise InvalidName(f"invalid queue name {name!r}")
    return name


def validate_prefix(prefix: str) -> str:
    if not _PREFIX.match(prefix) or prefix.endswith(":"):
        raise InvalidName(f"invalid key prefix {prefix!r}")
    return prefix


def validate_job_id(job_id: str) -> str:
    """Any id a job can have: generated integers or custom ids without ':'."""
    # On the worker's hot path (twice per job): one precompiled match.
    if not _JOB_ID.match(job_id) and not is_scheduler_run_id(job_id):
        raise InvalidName(f"invalid job id {job_id!r}")
    return job_id


def is_scheduler_run_id(job_id: str) -> bool:
    """Whether ``job_id`` names a job scheduler's run (``repeat:<id>:<ms>``)."""
    return len(job_id) <= MAX_JOB_ID_LENGTH and _SCHEDULER_RUN_ID.match(job_id) is not None


def validate_custom_job_id(job_id: str) -> str:
    """Custom ids may not look like generated ones (integers, scheduler runs)."""
    if not _JOB_ID.match(job_id):
        raise InvalidName(f"invalid job id {job_id!r}")
    if _INTEGER.match(job_id):
        raise InvalidName(f"custom job id {job_id!r} may not be an integer")
    if job_id in _QUEUE_OWN_KEYS:
        # A job's hash is <base><id>: the queue's own key. While that key
        # exists the add is answered "duplicated" and adds nothing; once the
        # job's hash takes its place the scripts refuse the queue (a pause:
        # "the key ...:paused holds a hash, where the queue keeps a list").
        raise InvalidName(f"custom job id {job_id!r} is the name of one of the queue's own keys")
    return job_id


class QueueKeys:
    """The key names of one queue, computed once (they are on every hot path)."""

    __slots__ = (
        "active",
        "base",
        "completed",
        "delayed",
        "events",
        "failed",
        "id",
        "limiter",
        "marker",
        "meta",
        "metrics_completed",
        "metrics_failed",
        "name",
        "paused",
        "pc",
        "prefix",
        "prioritized",
        "repeat",
        "stalled",
        "stalled_check",
        "wait",
        "waiting_children",
    )

    def __init__(self, name: str, prefix: str = DEFAULT_PREFIX) -> None:
        self.name = validate_queue_name(name)
        self.prefix = validate_prefix(prefix)
        # The "key prefix" scripts receive in ARGV to derive per-job keys.
        self.base = f"{prefix}:{name}:"
        b = self.base
        self.wait = b + "wait"
        self.paused = b + "paused"
        self.active = b + "active"
        self.prioritized = b + "prioritized"
        self.pc = b + "pc"
        self.delayed = b + "delayed"
        self.marker = b + "marker"
        self.completed = b + "completed"
        self.failed = b + "failed"
        self.waiting_children = b + "waiting-children"
        self.id = b + "id"
        self.meta = b + "meta"
        self.events = b + "events"
        self.stalled = b + "stalled"
        self.stalled_check = b + "stalled-check"
        self.limiter = b + "limiter"
        self.repeat = b + "repeat"
        self.metrics_completed = b + "metrics:completed"
        self.metrics_failed = b + "metrics:failed"

    def __repr__(self) -> str:
        return f"QueueKeys({self.name!r}, prefix={self.prefix!r})"

    def state(self, state: str) -> str:
        """The key holding the jobs of a state (``waiting-children`` included)."""
        if state not in KEY_STATE:
            raise InvalidName(f"unknown state {state!r}")
        return self.base + state  # a key state's name is its key's suffix

    def finished(self, target: str) -> str:
        """``completed`` or ``failed``: the zset a finished job lands in."""
        if target not in ("completed", "failed"):
            raise InvalidName(f"unknown finished state {target!r}")
        return self.base + target

    def metrics(self, target: str) -> str:
        return self.metrics_completed if target == "completed" else self.metrics_failed

    def metrics_data(self, target: str) -> str:
        return self.metrics(target) + ":data"

    def job(self, job_id: str) -> str:
        return self.base + job_id

    def lock(self, job_id: str) -> str:
        return self.base + job_id + ":lock"

    def logs(self, job_id: str) -> str:
        return self.base + job_id + ":logs"

    def dependencies(self, job_id: str) -> str:
        return self.base + job_id + ":dependencies"

    def processed(self, job_id: str) -> str:
        return self.base + job_id + ":processed"

    def deduplication(self, dedup_id: str) -> str:
        return self.base + "de:" + dedup_id

    def repeat_scheduler(self, scheduler_id: str) -> str:
        return self.repeat + ":" + scheduler_id

    # The dashboard's own keys, not the protocol's: the recent admin actions'
    # cohorts (dashboard/acting/cohort_record.py), kept 24 h. Under the queue's base,
    # so a {hash-tag} prefix keeps them in the queue's slot; a fixed part with
    # ':' after it, which no job id can be (ids have no ':'), nor a BullMQ key
    # of a job (K:lock, K:logs ...); discovery looks for ':meta' and ':id'.
    def cohort_index(self) -> str:
        """Sorted set: cohort id -> when its action ran (ms)."""
        return self.base + "echomq-dashboard:cohorts"

    def cohort(self, cohort_id: str) -> str:
        """String: one cohort, zlib-compressed JSON (queues/read/cohorts.py)."""
        return self.base + "echomq-dashboard:cohort:" + cohort_id

    def error_groups(self, part: str) -> str:
        """A key of the dashboard's error groups index (docs/protocol.md, "The
        dashboard's error groups index"): ``<base>dashboard-error-groups:<part>``.
        Under the queue's base so it shares the queue's hash tag; no BullMQ key
        ends in a second segment after a job id other than its own suffixes
        (lock, logs, ...), so a job named ``dashboard-error-groups`` keeps its keys."""
        return f"{self.base}{ERROR_GROUPS_SEGMENT}:{part}"


def _own_keys() -> frozenset[str]:
    probe = QueueKeys("q")
    own = (getattr(probe, name) for name in QueueKeys.__slots__ if name not in ("name", "prefix"))
    # The first segment: a job's own keys are <id>:<suffix> (lock, logs, failed
    # ...), so a job "metrics" had its :failed at the queue's metrics:failed,
    # and its removal deleted the failure counts there.
    suffixes = (key.removeprefix(probe.base) for key in own if key.startswith(probe.base))
    return frozenset(suffix.split(":", 1)[0] for suffix in suffixes)


# The queue's keys a job's hash (or its :failed, :lock ...) could collide
# with: wait, meta, id, events, metrics ...
_QUEUE_OWN_KEYS = _own_keys() - {""}


# The dashboard's own keys, beside the queues' (never under a queue's prefix,
# so no BullMQ tool counts or deletes them): the metrics history
# (queues.collector writes, queues.read.history reads). docs/protocol.md
# lists them.
HISTORY_ROOT = "echomq:history"


class HistoryKeys:
    """The metrics history of one queue.

    One hash tag per queue (``{<prefix>:<queue>}``) puts its state and its
    minute and hour hashes in one cluster slot, so the script that records a
    batch may write all of them atomically.
    """

    __slots__ = ("base", "state")

    def __init__(self, name: str, prefix: str = DEFAULT_PREFIX) -> None:
        validate_queue_name(name)
        validate_prefix(prefix)
        self.base = f"{HISTORY_ROOT}:{{{prefix}:{name}}}:"
        # Hash: the events stream cursor, running totals, the last backlog sample.
        self.state = self.base + "state"

    def minute(self, minute: int) -> str:
        """Hash of one minute (``minute`` = ms since the epoch // 60,000)."""
        return f"{self.base}m:{minute}"

    def hour(self, hour: int) -> str:
        """Hash of one hour (``hour`` = ms since the epoch // 3,600,000)."""
        return f"{self.base}h:{hour}"

    @property
    def recent(self) -> str:
        """String: the last minutes' completed and failed, packed
        (priv/scripts/recordHistory-4.lua); what the overview reads."""
        return self.base + "recent"


# String: the token of the dashboard process that collects (a lease, PX).
COLLECTOR_LEASE = f"{HISTORY_ROOT}:collector"
# Hash: what the collector says of itself (holder, when it last caught up,
# and the queues whose history it stopped: see stopped_history_field).
COLLECTOR_STATUS = f"{HISTORY_ROOT}:status"


def stopped_history_field(qualified: str) -> str:
    """The field of COLLECTOR_STATUS saying why the collector stopped the
    history of the queue ``<prefix>:<name>`` (one of its keys is broken)."""
    return f"stopped:{qualified}"
