"""What became of an admin action: its cohort (the jobs it moved) and where
each of them is now.

A retry or promote records its cohort (``dashboard/acting/cohort_record.py``): who,
when, from which state, how many jobs moved, the ids of at most
:data:`MAX_TRACKED` of them and the reason each had failed with. The record
is one compressed string key per cohort, indexed by time, kept 24 hours
(``QueueKeys.cohort`` / ``cohort_index``). Nothing is computed until someone
looks: :func:`breakdown` then asks where every tracked job is, in batches of
:data:`BATCH` ids per read-only script call (priv/scripts/cohortStates-6.lua),
so a look at the largest cohort is ``MAX_TRACKED / BATCH`` short calls.

What can be known, and is said: a job in a sorted-set state or active is
found there; a job whose hash exists in none of them is in a ready list
(waiting or paused: those lists may hold millions and are not walked, so a
hash another writer left in no state at all reads as waiting too); a job
whose hash is gone was removed (by removeOnComplete or removeOnFail, or by
someone): it is counted as gone, not guessed completed.
"""

from __future__ import annotations

import json
import re
import zlib
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import msgspec
from redis import Redis

from queues import codec, scripts
from queues.commands import reads
from queues.keys import InvalidName, QueueKeys, validate_job_id
from queues.read.error_folding import RULES_VERSION, field_text, fold_field, fold_form
from queues.read.failures import first_line
from queues.read.job import DIRECT_STATES
from queues.read.replies import replies
from queues.read.states import FAILED, TAB_OF_KEY, TABS, WAIT

# At most this many ids of one action are tracked ("first 100,000 tracked").
MAX_TRACKED = 100_000
# Ids per cohortStates call: about 1.5 ms of Redis each (measured: 100,000
# ids, half failed, half waiting, took 0.74 s of Redis in 500 calls), so a
# look never holds the workers back for long.
BATCH = 200
# How long a cohort is kept, and how many of one queue's (the newest).
KEEP_MS = 24 * 3600 * 1000
MAX_COHORTS_PER_QUEUE = 20
# Reasons are compared on their first bytes: requeueJobs reports that much
# (Queue.retry_all) and cohortStates answers that much. Enough for a whole
# first line (the kind): cut at 200, three kinds of tests/failure_corpus.py
# (the AWS SDK's S3 errors, IAM's with two ARNs, requests' "Max retries
# exceeded", 230-300 bytes) were cut at another place in each job, and
# their jobs' reasons differed.
REASON_BYTES = 1_000
# Distinct previous reasons a cohort keeps; a job with a further one has none.
MAX_REASONS = 50
# The characters of a sample reason kept with each (one real reason of a kind).
SAMPLE_CHARS = 300
# A stored cohort larger than this when inflated is not read (a hostile or
# broken writer must not make a look inflate gigabytes).
MAX_RECORD_BYTES = 16 * 1024 * 1024
GONE = "gone"  # the part of the jobs whose hash is gone
_COHORT_ID = re.compile(r"[0-9]{13}-[0-9a-f]{8}\Z")  # ASCII digits: \d takes others


def fold_reason(reason: bytes | str | None) -> str:
    """The kind of a failure reason (its first REASON_BYTES): its first line
    folded by the error groups' own function (fold_field), so "failed again
    with the same reason" and a group agree; "" when there is none."""
    return fold_field(reason, read=REASON_BYTES)[1] if reason and reason.strip() else ""


def sample_reason(reason: bytes | str | None) -> str:
    """A reason as a sample of its kind: its first line, decoded as the job
    page decodes it, at most SAMPLE_CHARS characters."""
    return first_line(field_text(reason, read=REASON_BYTES), limit=SAMPLE_CHARS)


def reason_prefix(raw: bytes | str | None) -> str:
    """A reason as the scripts report it: its first REASON_BYTES bytes."""
    if raw is None:
        return ""
    data = raw.encode() if isinstance(raw, str) else raw
    return data[:REASON_BYTES].decode("utf-8", errors="replace")


def _valid_job_id(job_id: str) -> bool:
    try:
        validate_job_id(job_id)
    except InvalidName:
        return False
    return True


def is_cohort_id(text: str) -> bool:
    return _COHORT_ID.match(text) is not None


class CohortUnreadable(ValueError):
    """A stored cohort that is not what the dashboard writes."""


@dataclass(frozen=True, slots=True)
class Cohort:
    """One recorded action and the jobs it moved."""

    id: str
    action: str  # "retry", "promote", "retry_all", "promote_all", ...
    source: str  # the tab the jobs came from: failed, completed, delayed
    user: str
    at_ms: int
    count: int  # jobs moved (may exceed the ids tracked)
    ids: tuple[str, ...]
    # The distinct kinds (folded reasons) the jobs had failed with, and per
    # id the index of its kind there (-1: none, or not kept); one real
    # reason of each kind.
    reasons: tuple[str, ...] = ()
    reason_of: tuple[int, ...] = ()
    audit_id: int | None = None
    samples: tuple[str, ...] = ()

    @property
    def tracked(self) -> int:
        return len(self.ids)

    @property
    def top_previous_reason(self) -> str:
        """The commonest kind (folded reason) its jobs had failed with before."""
        top = self._top_previous
        return self.reasons[top] if top is not None else ""

    @property
    def top_previous_sample(self) -> str:
        """A real reason of that kind, one of the jobs' own."""
        top = self._top_previous
        return self.samples[top] if top is not None and top < len(self.samples) else ""

    @property
    def _top_previous(self) -> int | None:
        common = Counter(i for i in self.reason_of if i >= 0).most_common(1)
        return common[0][0] if common else None

    def encode(self) -> bytes:
        record = {
            "v": 1,
            "rules": RULES_VERSION,
            "action": self.action,
            "source": self.source,
            "user": self.user,
            "at_ms": self.at_ms,
            "count": self.count,
            "ids": list(self.ids),
            "reasons": list(self.reasons),
            "reason_of": list(self.reason_of),
            "samples": list(self.samples),
            "audit_id": self.audit_id,
        }
        # A retry-all's answer waits for this: for its record of 100,000 ids,
        # msgspec writes the JSON in 1-3 ms where json.dumps took 20-35, and
        # zlib's level 1 compresses it about as well as level 6 (5% larger)
        # in 10 ms instead of 40-50.
        return zlib.compress(msgspec.json.encode(record), 1)


def build_cohort(
    cohort_id: str,
    *,
    action: str,
    source: str,
    user: str,
    at_ms: int,
    count: int,
    ids: Sequence[str],
    previous_reasons: dict[str, str],
    audit_id: int | None,
) -> Cohort:
    """A cohort of the first MAX_TRACKED ``ids``, each with the kind of its
    previous reason (distinct kinds kept up to MAX_REASONS, each with the
    first of its reasons as its sample)."""
    tracked = tuple(ids[:MAX_TRACKED])
    reasons: dict[str, int] = {}
    samples: list[str] = []
    reason_of = []
    # A reason of a form met before has its kind's index already: the jobs of
    # one action mostly failed with a few kinds of reason that differ only in
    # their numbers, and each form is folded once here (fold_form; a reason
    # without one is its own key: a str, never equal to a form's bytes).
    index_of_form: dict[bytes | str, int] = {}
    for job_id in tracked:
        reason = previous_reasons.get(job_id, "")
        form = fold_form(reason, read=REASON_BYTES)
        key = reason if form is None else form
        index = index_of_form.get(key)
        if index is None:
            folded = fold_reason(reason)
            index = reasons.get(folded, -1) if folded else -1
            if folded and index < 0 and len(reasons) < MAX_REASONS:
                index = reasons[folded] = len(reasons)
                samples.append(sample_reason(reason))
            index_of_form[key] = index
        reason_of.append(index)
    return Cohort(
        cohort_id,
        action,
        source,
        user,
        at_ms,
        max(count, len(tracked)),
        tracked,
        tuple(reasons),
        tuple(reason_of) if reasons else (),
        audit_id,
        tuple(samples),
    )


def _field(record: dict[str, Any], name: str, kind: type) -> Any:
    value = record.get(name)
    if not isinstance(value, kind) or isinstance(value, bool):
        raise CohortUnreadable(f"its field {name} is missing or of the wrong type")
    return value


def decode_cohort(cohort_id: str, raw: bytes) -> Cohort:
    """The cohort stored as ``raw``; CohortUnreadable when it is anything else."""
    try:
        inflate = zlib.decompressobj()
        text = inflate.decompress(raw, MAX_RECORD_BYTES)
        if inflate.unconsumed_tail:
            raise CohortUnreadable("it is too large")
        record = json.loads(text)
    except (zlib.error, ValueError, RecursionError) as error:
        if isinstance(error, CohortUnreadable):
            raise
        raise CohortUnreadable("it is not a compressed JSON record") from None
    if not isinstance(record, dict):
        raise CohortUnreadable("it is not a JSON object")
    ids = _field(record, "ids", list)
    reasons = _field(record, "reasons", list)
    reason_of = _field(record, "reason_of", list)
    if not all(isinstance(job_id, str) for job_id in ids):
        raise CohortUnreadable("its ids are not all strings")
    if not all(_valid_job_id(job_id) for job_id in ids):
        raise CohortUnreadable("an id in it is not a job id")
    if not all(isinstance(reason, str) for reason in reasons) or (
        reason_of
        and (
            len(reason_of) != len(ids)
            or not all(type(i) is int and -1 <= i < len(reasons) for i in reason_of)
        )
    ):
        raise CohortUnreadable("its reasons do not match its ids")
    audit_id = record.get("audit_id")
    samples = record.get("samples")
    if not isinstance(samples, list) or len(samples) != len(reasons):
        samples = []
    if record.get("rules") != RULES_VERSION:
        # Folded by other rules (a cohort recorded before an upgrade): its
        # kinds cannot be compared with the ones its jobs fail with now.
        reasons, reason_of, samples = [], [], []
    return Cohort(
        cohort_id,
        _field(record, "action", str)[:40],
        _field(record, "source", str)[:40],
        _field(record, "user", str)[:150],
        _field(record, "at_ms", int),
        _field(record, "count", int),
        tuple(ids),
        tuple(reasons),
        tuple(reason_of),
        audit_id if type(audit_id) is int else None,
        tuple(sample[:SAMPLE_CHARS] if isinstance(sample, str) else "" for sample in samples),
    )


@dataclass(frozen=True, slots=True)
class Unreadable:
    """A cohort listed in the index whose record cannot be read."""

    id: str
    at_ms: int
    problem: str


def recent_cohorts(
    client: Redis, keys: QueueKeys, now_ms: int, limit: int = MAX_COHORTS_PER_QUEUE
) -> list[Cohort | Unreadable]:
    """The queue's cohorts of the last 24 hours, newest first: two round
    trips, the records only (no job is looked at). A record that expired
    meanwhile is left out; one that cannot be read is listed as Unreadable."""
    pipe = client.pipeline(transaction=False)
    pipe.zrevrangebyscore(keys.cohort_index(), "+inf", now_ms - KEEP_MS, 0, limit, withscores=True)
    (listed,) = replies(pipe)
    wanted = [
        (text, codec.score_ms(score))
        for member, score in listed or []
        if (text := codec.text(member) or "") and is_cohort_id(text)
    ]
    if not wanted:
        return []
    pipe = client.pipeline(transaction=False)
    for cohort_id, _ in wanted:
        pipe.get(keys.cohort(cohort_id))
    found: list[Cohort | Unreadable] = []
    for (cohort_id, at_ms), raw in zip(wanted, pipe.execute(raise_on_error=False), strict=True):
        if raw is None:
            continue
        if isinstance(raw, Exception):
            found.append(Unreadable(cohort_id, at_ms, "its key is not a string"))
            continue
        try:
            found.append(decode_cohort(cohort_id, raw))
        except CohortUnreadable as problem:
            found.append(Unreadable(cohort_id, at_ms, str(problem)))
    return found


def load_cohort(client: Redis, keys: QueueKeys, cohort_id: str) -> Cohort | None:
    """One cohort, None when it is gone (expired); CohortUnreadable when broken."""
    if not is_cohort_id(cohort_id):
        return None
    pipe = client.pipeline(transaction=False)
    pipe.get(keys.cohort(cohort_id))
    (raw,) = pipe.execute(raise_on_error=False)
    if raw is None:
        return None
    if isinstance(raw, Exception):
        raise CohortUnreadable("its key is not a string")
    return decode_cohort(cohort_id, raw)


def previous_reasons(client: Redis, keys: QueueKeys, job_ids: Sequence[str]) -> dict[str, str]:
    """The failure reason each job holds now (its first REASON_BYTES bytes),
    read before a retry deletes it: one round trip per BATCH ids. A
    wrong-typed key reads as no reason; an id that is no job id is left out."""
    valid = [job_id for job_id in job_ids[:MAX_TRACKED] if _valid_job_id(job_id)]
    found: dict[str, str] = {}
    for start in range(0, len(valid), BATCH):
        chunk = valid[start : start + BATCH]
        pipe = client.pipeline(transaction=False)
        for job_id in chunk:
            pipe.hget(keys.job(job_id), "failedReason")
        for job_id, raw in zip(chunk, replies(pipe), strict=True):
            if raw:
                found[job_id] = reason_prefix(raw)
    return found


@dataclass(slots=True)
class Breakdown:
    """Where a cohort's tracked jobs are now. ``parts``: the ids per tab name
    (TABS order) and :data:`GONE`, in the cohort's order; ``failed_same``:
    the failed ones whose reason folds like the one they had before."""

    parts: dict[str, list[str]] = field(default_factory=dict)
    failed_same: list[str] = field(default_factory=list)
    failed_reasons: Counter[str] = field(default_factory=Counter)
    failed_samples: dict[str, str] = field(default_factory=dict)  # kind -> a reason of it

    def count(self, part: str) -> int:
        return len(self.parts.get(part, ()))

    @property
    def top_failed_reason(self) -> str:
        common = self.failed_reasons.most_common(1)
        return common[0][0] if common else ""

    @property
    def top_failed_sample(self) -> str:
        return self.failed_samples.get(self.top_failed_reason, "")


_FAILED_TAB = TAB_OF_KEY[FAILED.name]


def _where(position: int) -> str:
    """A cohortStates answer as a part name."""
    if position < 0:
        return GONE
    state = DIRECT_STATES[position - 1] if position else WAIT
    return TAB_OF_KEY[state.name]


def breakdown(client: Redis, keys: QueueKeys, cohort: Cohort) -> Breakdown:
    """Where each tracked job of ``cohort`` is now: one read-only script call
    per BATCH ids (MAX_TRACKED / BATCH calls at most)."""
    found: dict[str, list[str]] = {}
    result = Breakdown()
    for start in range(0, len(cohort.ids), BATCH):
        chunk = cohort.ids[start : start + BATCH]
        call = reads.cohort_states(
            keys, DIRECT_STATES, chunk, failed=FAILED, reason_bytes=REASON_BYTES
        )
        answer = scripts.run(client, call)
        for offset, job_id in enumerate(chunk):
            part = _where(int(answer[2 * offset]))
            found.setdefault(part, []).append(job_id)
            if part != _FAILED_TAB:
                continue
            raw = answer[2 * offset + 1]
            now = fold_reason(raw)
            result.failed_reasons[now] += 1
            if now not in result.failed_samples:
                result.failed_samples[now] = sample_reason(raw)
            index = cohort.reason_of[start + offset] if cohort.reason_of else -1
            if now and index >= 0 and cohort.reasons[index] == now:
                result.failed_same.append(job_id)
    order = [tab.name for tab in TABS] + [GONE]
    result.parts = {part: found[part] for part in order if part in found}
    return result
