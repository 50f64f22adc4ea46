"""A cohort's previous reasons, and "failed again with the same reason", at the
edges the first tests did not reach (issue 26): a job with no recorded
reason, a cohort larger than one look's batch, more distinct reasons than a
cohort keeps, and a count its caller gave too low. Real Redis; jobs failed
again through Queue.fail, as an admin or a worker's failure would."""

from __future__ import annotations

import json
import zlib

import pytest
from redis import Redis

from dashboard.acting import actions
from dashboard.acting.cohort_record import record_cohort
from queues.queue import Queue, now_ms
from queues.read import cohorts
from queues.read.cohorts import (
    BATCH,
    MAX_REASONS,
    Cohort,
    Unreadable,
    breakdown,
    recent_cohorts,
)
from queues.read.refs import QueueRef
from tests.dashboard_seed import seed_job

REF = QueueRef("bull", "mailer")
KEYS = REF.keys

pytestmark = pytest.mark.django_db

SMTP_BUSY = "SMTPServerDisconnected: Connection unexpectedly closed by smtp.sendgrid.net"
BOUNCED = (
    "SMTPRecipientsRefused: 550 5.1.1 The email account that you tried to reach does not exist"
)


def _failed_with(client: Redis, reasons: dict[str, str]) -> None:
    for score, (job_id, reason) in enumerate(reasons.items(), 1):
        data = {"to": f"customer{score}@example.org", "template": "receipt"}
        seed_job(client, KEYS, job_id, state="failed", name="send-receipt", data=data, score=score)
        client.hset(KEYS.job(job_id), "failedReason", reason)


def _only_cohort(client: Redis) -> Cohort:
    (cohort,) = recent_cohorts(client, KEYS, now_ms())
    assert isinstance(cohort, Cohort)
    return cohort


def test_a_job_with_no_previous_reason_never_failed_the_same_way(
    dashboard_redis: Redis,
) -> None:
    """A job whose worker failed it without a message (bullmq writes "") has
    no previous reason: failing now with whatever reason is not "the same
    again", even one that happens to be the last reason the cohort keeps."""
    client = dashboard_redis
    _failed_with(client, {"r-101": SMTP_BUSY, "r-102": BOUNCED, "r-103": ""})
    actions.job_action(client, REF, "retry", ["r-101", "r-102", "r-103"], user="oncall")
    cohort = _only_cohort(client)
    assert cohort.reasons[-1] == cohorts.fold_reason(BOUNCED)
    assert cohort.reason_of[2] == -1
    queue = Queue("mailer", client)
    for job_id in ("r-101", "r-102", "r-103"):
        queue.fail(job_id, BOUNCED)
    look = breakdown(client, KEYS, cohort)
    assert look.count("failed") == 3
    assert look.failed_same == ["r-102"]


def test_jobs_past_the_first_batch_are_compared_with_their_own_previous_reason(
    dashboard_redis: Redis,
) -> None:
    """A look reads BATCH ids per call; a job of a later batch must be
    compared with its own previous reason, not with the one at its offset in
    the first batch."""
    client = dashboard_redis
    total = BATCH + 60
    reasons = {f"m-{n:05d}": SMTP_BUSY if n <= BATCH else BOUNCED for n in range(1, total + 1)}
    _failed_with(client, reasons)
    actions.queue_action(client, REF, "retry_all", user="oncall")
    cohort = _only_cohort(client)
    assert cohort.tracked == total
    queue = Queue("mailer", client)
    for job_id, reason in reasons.items():
        queue.fail(job_id, reason)  # each fails again exactly as before
    look = breakdown(client, KEYS, cohort)
    assert look.count("failed") == total
    assert sorted(look.failed_same) == sorted(reasons)


# Distinct failures of a mail and billing service: each folds to its own text.
_KINDS = [
    "ConnectionResetError",
    "ReadTimeout",
    "SSLError certificate verify failed",
    "RemoteDisconnected",
    "TooManyRedirects",
    "ProxyError",
    "ChunkedEncodingError",
    "InvalidHeader",
    "ContentDecodingError",
    "RetryError max retries exceeded",
    "ConnectTimeout",
    "JSONDecodeError expecting value",
]
_SERVICES = ["stripe", "sendgrid", "twilio", "mailgun", "postmark"]


def test_a_cohort_keeps_at_most_max_reasons_distinct_reasons(dashboard_redis: Redis) -> None:
    client = dashboard_redis
    texts = [f"{kind} while calling {service}" for service in _SERVICES for kind in _KINDS]
    assert len(texts) > MAX_REASONS
    reasons = {f"b-{n:03d}": text for n, text in enumerate(texts, 1)}
    _failed_with(client, reasons)
    actions.queue_action(client, REF, "retry_all", user="oncall")
    cohort = _only_cohort(client)
    assert len(set(map(cohorts.fold_reason, texts))) == len(texts)
    assert len(cohort.reasons) == MAX_REASONS
    assert cohort.reasons == tuple(cohorts.fold_reason(text) for text in texts[:MAX_REASONS])
    kept = dict(zip(cohort.ids, cohort.reason_of, strict=True))
    assert [kept[job_id] for job_id in list(reasons)[MAX_REASONS:]] == [-1] * (
        len(texts) - MAX_REASONS
    )


def test_a_cohort_never_counts_fewer_jobs_than_it_tracks(dashboard_redis: Redis) -> None:
    """A caller's count is how many moved in all, which cannot be fewer than
    the ids it names: a count given too low reads as the ids tracked."""
    ids = ["4711", "4712", "4713"]
    record_cohort(
        dashboard_redis, REF, "retry", ids, user="oncall", at_ms=now_ms(), source="failed", count=1
    )
    cohort = _only_cohort(dashboard_redis)
    assert (cohort.count, cohort.tracked) == (3, 3)


def test_a_look_names_the_commonest_reason_the_jobs_fail_with_now(dashboard_redis: Redis) -> None:
    client = dashboard_redis
    _failed_with(client, {f"t-{n}": SMTP_BUSY for n in range(1, 6)})
    actions.queue_action(client, REF, "retry_all", user="oncall")
    cohort = _only_cohort(client)
    assert breakdown(client, KEYS, cohort).top_failed_reason == ""  # none failed yet
    queue = Queue("mailer", client)
    for n, reason in ((1, BOUNCED), (2, BOUNCED), (3, SMTP_BUSY)):
        queue.fail(f"t-{n}", reason)
    look = breakdown(client, KEYS, cohort)
    assert look.top_failed_reason == cohorts.fold_reason(BOUNCED)
    assert cohort.top_previous_reason == cohorts.fold_reason(SMTP_BUSY)


def test_completed_jobs_retried_and_failed_since_never_failed_the_same_way(
    dashboard_redis: Redis,
) -> None:
    """A retry of completed jobs keeps no reasons: when they fail now, a
    look counts them failed and none "the same again"."""
    client = dashboard_redis
    for n in range(1, 4):
        seed_job(client, KEYS, f"c-{n}", state="completed", name="send-receipt")
    actions.queue_action(client, REF, "retry_all", user="oncall", state="completed")
    cohort = _only_cohort(client)
    assert (cohort.reasons, cohort.reason_of) == ((), ())
    queue = Queue("mailer", client)
    for n in range(1, 4):
        queue.fail(f"c-{n}", SMTP_BUSY)
    look = breakdown(client, KEYS, cohort)
    assert (look.count("failed"), look.failed_same) == (3, [])


def _stored(client: Redis, reasons: list[str], reason_of: list[int]) -> Cohort | Unreadable:
    record = {
        "v": 1,
        "action": "retry",
        "source": "failed",
        "user": "oncall",
        "at_ms": now_ms(),
        "count": len(reason_of),
        "ids": [f"s-{n}" for n in range(len(reason_of))],
        "reasons": reasons,
        "reason_of": reason_of,
        "audit_id": 17,
    }
    cohort_id = f"{now_ms():013d}-5eed0001"
    client.set(KEYS.cohort(cohort_id), zlib.compress(json.dumps(record).encode()))
    client.zadd(KEYS.cohort_index(), {cohort_id: now_ms()})
    (listed,) = recent_cohorts(client, KEYS, now_ms() + 1)
    return listed


@pytest.mark.parametrize(
    ("reason_of", "readable"),
    [([0, 1, -1], True), ([0, 2, -1], False), ([0, 1, -2], False)],
)
def test_a_stored_reason_index_must_name_a_kept_reason_or_none(
    dashboard_redis: Redis, reason_of: list[int], readable: bool
) -> None:
    listed = _stored(dashboard_redis, [SMTP_BUSY, BOUNCED], reason_of)
    assert isinstance(listed, Cohort if readable else Unreadable)


def test_the_commonest_previous_reason_ignores_jobs_that_had_none(dashboard_redis: Redis) -> None:
    client = dashboard_redis
    reasons = {"n-1": "", "n-2": "", "n-3": "", "n-4": SMTP_BUSY, "n-5": SMTP_BUSY, "n-6": BOUNCED}
    _failed_with(client, reasons)
    actions.queue_action(client, REF, "retry_all", user="oncall")
    assert _only_cohort(client).top_previous_reason == cohorts.fold_reason(SMTP_BUSY)


def test_a_hostile_record_is_read_with_its_texts_cut_to_size(dashboard_redis: Redis) -> None:
    record = {
        "v": 1,
        "action": "retry" * 20,
        "source": "failed" * 20,
        "user": "u" * 400,
        "at_ms": now_ms(),
        "count": 1,
        "ids": ["1"],
        "reasons": [],
        "reason_of": [],
    }
    cohort_id = f"{now_ms():013d}-5eed0002"
    dashboard_redis.set(KEYS.cohort(cohort_id), zlib.compress(json.dumps(record).encode()))
    cohort = cohorts.load_cohort(dashboard_redis, KEYS, cohort_id)
    assert cohort is not None
    assert (len(cohort.action), len(cohort.source), len(cohort.user)) == (40, 40, 150)


def test_a_record_nested_past_the_parser_reads_as_unreadable(dashboard_redis: Redis) -> None:
    cohort_id = f"{now_ms():013d}-5eed0003"
    dashboard_redis.set(KEYS.cohort(cohort_id), zlib.compress(b"[" * 100_000))
    with pytest.raises(cohorts.CohortUnreadable, match="not a compressed JSON record"):
        cohorts.load_cohort(dashboard_redis, KEYS, cohort_id)
    dashboard_redis.delete(KEYS.cohort(cohort_id))
    dashboard_redis.rpush(KEYS.cohort(cohort_id), "not a string")
    with pytest.raises(cohorts.CohortUnreadable, match="not a string"):
        cohorts.load_cohort(dashboard_redis, KEYS, cohort_id)


def test_an_expired_or_broken_cohort_does_not_hide_the_older_ones(dashboard_redis: Redis) -> None:
    client = dashboard_redis
    at = now_ms()
    made = [
        record_cohort(client, REF, "retry", [f"{n}"], user="oncall", at_ms=at + n, source="failed")
        for n in range(3)
    ]
    client.delete(KEYS.cohort(made[2] or ""))  # the newest expired
    client.delete(KEYS.cohort(made[1] or ""))
    client.rpush(KEYS.cohort(made[1] or ""), "x")  # the next one broken
    listed = recent_cohorts(client, KEYS, at + 10)
    assert [type(c).__name__ for c in listed] == ["Unreadable", "Cohort"]
    assert listed[1].id == made[0]


def test_a_record_without_samples_names_its_commonest_reason_with_no_sample(
    dashboard_redis: Redis,
) -> None:
    """A record whose samples are missing (written before they were kept) or
    do not match its reasons still has its kinds: the commonest previous
    reason is named, and its sample is "" rather than an IndexError out of
    the cohorts page."""
    client = dashboard_redis
    _failed_with(client, {"r-1": SMTP_BUSY, "r-2": SMTP_BUSY, "r-3": BOUNCED})
    actions.queue_action(client, REF, "retry_all", user="oncall")
    written = _only_cohort(client)
    assert written.top_previous_sample == SMTP_BUSY
    record = json.loads(zlib.decompress(client.get(KEYS.cohort(written.id)) or b""))
    for samples in (None, [SMTP_BUSY]):
        if samples is None:
            del record["samples"]
        else:
            record["samples"] = samples  # one sample for two reasons
        client.set(KEYS.cohort(written.id), zlib.compress(json.dumps(record).encode()))
        cohort = _only_cohort(client)
        assert cohort.top_previous_reason == cohorts.fold_reason(SMTP_BUSY)
        assert cohort.top_previous_sample == ""


def test_a_cohort_folds_each_form_of_its_previous_reasons_once(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A retry-all's jobs mostly failed with a few kinds of reason that differ
    per job only in their numbers (an address, a port, a duration): building
    its cohort folds each form once (its digits read as "1", the error
    groups' own shortcut), not each of its 100,000 reasons, and keeps what
    folding each reason would have kept."""
    texts = {
        f"r-{n}": f"ConnectionError: Error 111 connecting to 10.0.{n % 250}.{n % 7 + 3}:6379."
        " Connection refused."
        if n % 3
        else f"ReadTimeout: HTTPSConnectionPool(host='api.stripe.com', port=443): Read timed"
        f" out. (read timeout={n % 40 + 1})"
        for n in range(1, 1001)
    }
    folds: list[str] = []
    fold = cohorts.fold_reason

    def counted(reason: bytes | str | None) -> str:
        folds.append(str(reason))
        return fold(reason)

    monkeypatch.setattr(cohorts, "fold_reason", counted)
    cohort = cohorts.build_cohort(
        "1764931200000-0a1b2c3d",
        action="retry_all",
        source="failed",
        user="oncall",
        at_ms=1764931200000,
        count=len(texts),
        ids=list(texts),
        previous_reasons=texts,
        audit_id=None,
    )
    forms = {text.translate(str.maketrans("0123456789", "1111111111")) for text in texts.values()}
    assert len(folds) == len(forms) < 20
    kinds = [fold(text) for text in texts.values()]
    assert cohort.reasons == tuple(dict.fromkeys(kinds))
    assert [cohort.reasons[index] for index in cohort.reason_of] == kinds


def test_a_blank_reason_is_no_reason_so_failing_blank_again_is_not_the_same_way(
    dashboard_redis: Redis,
) -> None:
    """A worker that fails a job with what a command printed on stderr leaves
    "\\n" when it printed nothing: no reason. The cohort keeps no kind for it,
    and failing blank again is not "failed again the same way" (there is
    nothing to compare), unlike a job that failed with its SMTP error twice."""
    client = dashboard_redis
    _failed_with(client, {"r-201": "\n", "r-202": " \n", "r-203": SMTP_BUSY})
    actions.job_action(client, REF, "retry", ["r-201", "r-202", "r-203"], user="oncall")
    cohort = _only_cohort(client)
    assert cohort.reasons == (cohorts.fold_reason(SMTP_BUSY),)
    assert cohort.reason_of == (-1, -1, 0)
    queue = Queue("mailer", client)
    for job_id, reason in (("r-201", "\n"), ("r-202", " \n"), ("r-203", SMTP_BUSY)):
        queue.fail(job_id, reason)
    look = breakdown(client, KEYS, cohort)
    assert look.count("failed") == 3
    assert look.failed_same == ["r-203"]


def test_an_index_member_that_is_no_cohort_id_is_not_listed(dashboard_redis: Redis) -> None:
    """The index names records by cohort id, and the tab links each by it. A
    member that is no cohort id (here a record copied under its id in
    capitals, by hand or by another tool on the prefix) is never listed, even
    with a record under its name: its link would not open (load_cohort takes
    cohort ids only)."""
    client = dashboard_redis
    at = now_ms()
    made = record_cohort(client, REF, "retry", ["r-1"], user="oncall", at_ms=at, source="failed")
    assert made is not None
    copied = made.upper()
    client.set(KEYS.cohort(copied), client.get(KEYS.cohort(made)) or b"")
    client.zadd(KEYS.cohort_index(), {copied: at + 1})
    assert [c.id for c in recent_cohorts(client, KEYS, at + 2)] == [made]
    assert cohorts.load_cohort(client, KEYS, copied) is None


def test_reading_cohorts_sends_only_the_reads_it_needs(dashboard_redis: Redis) -> None:
    """The cohorts tab, a cohort's page and a retry's reading of the reasons
    it replaces are pipelines of plain reads: no MULTI/EXEC around them (two
    more commands each, and a transaction a Redis Cluster refuses across the
    slots of a queue's keys)."""
    client = dashboard_redis
    at = now_ms()
    _failed_with(client, {"r-1": SMTP_BUSY, "r-2": BOUNCED, "r-3": SMTP_BUSY})
    made = [
        record_cohort(
            client, REF, "retry", [f"r-{n}"], user="oncall", at_ms=at + n, source="failed"
        )
        for n in (1, 2, 3)
    ]
    client.config_resetstat()
    assert len(recent_cohorts(client, KEYS, at + 10)) == 3
    assert cohorts.load_cohort(client, KEYS, made[0] or "") is not None
    assert cohorts.previous_reasons(client, KEYS, ["r-1", "r-2", "r-3"]) == {
        "r-1": SMTP_BUSY,
        "r-2": BOUNCED,
        "r-3": SMTP_BUSY,
    }
    stats = client.info("commandstats")
    # These commands only: a thread of the test process may read Redis too.
    wanted = ("zrevrangebyscore", "get", "hget", "multi", "exec")
    calls = {name: stats.get(f"cmdstat_{name}", {}).get("calls", 0) for name in wanted}
    assert calls == {"zrevrangebyscore": 1, "get": 4, "hget": 3, "multi": 0, "exec": 0}
