"""The schedulers list (queues.read.schedulers): BullMQ-written job schedulers
and legacy repeatable jobs told apart, every definition shown as well as it
can be, and a page that costs the same whatever the number of schedulers."""

from __future__ import annotations

import json
import time

import msgpack
import pytest
from msgspec import to_builtins
from redis import Redis

from queues.read.refs import QueueRef
from queues.read.schedulers import (
    JOB_SCHEDULER,
    LEGACY_REPEATABLE,
    TEMPLATE_DISPLAY_LIMIT,
    SchedulerRow,
    scheduler_page,
    template_preview,
)
from queues.schedulers import JobSchedulers, Repeat
from tests.scheduler_helpers import BULLMQ_COMMANDS, BullmqSchedulerScripts

REF = QueueRef("bull", "crons")
KEYS = REF.keys


def rows_by_id(client: Redis) -> dict[str, SchedulerRow]:
    return {row.scheduler_id: row for row in scheduler_page(client, REF).rows}


def add_bullmq_legacy_repeatable(
    client: Redis, key: str, next_ms: int, **definition: object
) -> None:
    """BullMQ's addRepeatableJob-2 (the repeatable jobs before job schedulers)."""
    script = client.register_script((BULLMQ_COMMANDS / "addRepeatableJob-2.lua").read_text())
    script(
        keys=[KEYS.repeat, KEYS.delayed],
        args=[next_ms, msgpack.packb(definition), key, key, KEYS.base],
    )


def test_schedulers_bullmq_wrote_are_listed_with_their_definition_soonest_first(
    redis_client: Redis,
) -> None:
    theirs = BullmqSchedulerScripts(redis_client, REF.name)
    soon = int(time.time() * 1000) + 60_000
    theirs.upsert("beat", name="ping", data={"to": "ops"}, every=30_000)
    theirs.upsert(
        "nightly", name="report", data={}, pattern="0 3 * * *", tz="Europe/Paris", next_ms=soon
    )
    add_bullmq_legacy_repeatable(
        redis_client, "0f1a", soon + 1, name="sweep", pattern="*/5 * * * *", tz="UTC"
    )
    page = scheduler_page(redis_client, REF)
    assert page.total == 3
    assert [row.scheduler_id for row in page.rows] == ["beat", "nightly", "0f1a"]
    beat, nightly, legacy = page.rows
    assert (beat.kind, beat.name, beat.every_ms, beat.pattern) == (
        JOB_SCHEDULER,
        "ping",
        30_000,
        None,
    )
    assert beat.iterations == 1
    assert json.loads(beat.data.text or "") == {"to": "ops"}
    assert beat.schedule == "every 30 s"
    assert beat.pending_job_id == f"repeat:beat:{beat.next_run_ms}"
    assert beat.notes == []
    assert beat.can_run_now
    assert (nightly.pattern, nightly.tz, nightly.next_run_ms) == ("0 3 * * *", "Europe/Paris", soon)
    assert nightly.data.text is None
    assert template_preview(nightly.data) == "{}"
    assert nightly.schedule == "cron 0 3 * * *"
    assert (legacy.kind, legacy.name, legacy.pattern, legacy.tz) == (
        LEGACY_REPEATABLE, "sweep", "*/5 * * * *", "UTC",
    )  # fmt: skip
    assert legacy.iterations is None
    assert not legacy.can_run_now
    as_json = to_builtins(page.as_json())
    assert [s["kind"] for s in as_json["schedulers"]] == ["scheduler", "scheduler", "legacy"]


def test_our_runtime_s_schedulers_show_their_limit_dates_and_template(redis_client: Redis) -> None:
    JobSchedulers(REF.name, redis_client).upsert(
        "five",
        Repeat(every_ms=90_000, limit=5, end_ms=4_102_444_800_000),
        name="n",
        data={"k": "v"},
        opts={"attempts": 2},
    )
    row = rows_by_id(redis_client)["five"]
    assert (row.limit, row.iterations, row.end_ms) == (5, 1, 4_102_444_800_000)
    assert row.schedule == "every 90 s"
    assert template_preview(row.opts) == '{"attempts":2}'
    assert row.notes == []


def test_the_oldest_legacy_repeatable_job_is_read_from_its_member(redis_client: Redis) -> None:
    redis_client.zadd(KEYS.repeat, {"cleanup:job-1:1767222000000:UTC:0 * * * *": 5})
    redis_client.zadd(KEYS.repeat, {"poll:::: 60000": 6})
    rows = rows_by_id(redis_client)
    old = rows["cleanup:job-1:1767222000000:UTC:0 * * * *"]
    assert (old.kind, old.name, old.end_ms, old.tz, old.pattern) == (
        LEGACY_REPEATABLE, "cleanup", 1_767_222_000_000, "UTC", "0 * * * *",
    )  # fmt: skip
    assert old.notes == []
    # A suffix that is neither a pattern cron reads nor digits gets a note.
    assert rows["poll:::: 60000"].notes


def test_the_pending_run_of_a_legacy_key_is_found_by_its_checksum_id(redis_client: Redis) -> None:
    """BullMQ before 5.0 named a legacy key's runs repeat:<md5 of name, job id
    and md5 of the key>:<ms>. The figures below are the MD5s of those texts,
    worked out by hand (md5sum), so that this test does not repeat the code."""
    key = "cleanup:job-1:1767222000000:UTC:0 * * * *"
    # printf '%s' "$key" | md5sum                   -> 77b43458f86f1a0a2c30d369c6491989
    # printf '%s' "cleanupjob-1<that>" | md5sum     -> 9aa8072704ff0741b32deeba5df2814d
    run_ms = 1_767_000_000_000
    run_id = f"repeat:9aa8072704ff0741b32deeba5df2814d:{run_ms}"
    redis_client.zadd(KEYS.repeat, {key: run_ms})
    redis_client.zadd(KEYS.repeat, {"poll::::60000": run_ms + 1})  # no run anywhere
    assert rows_by_id(redis_client)[key].pending_job_id is None  # the run is not there yet
    redis_client.hset(KEYS.job(run_id), mapping={"name": "cleanup", "data": "{}", "rjk": key})
    redis_client.zadd(KEYS.delayed, {run_id: run_ms * 0x1000})
    rows = rows_by_id(redis_client)
    assert rows[key].pending_job_id == run_id
    assert rows["poll::::60000"].pending_job_id is None
    assert scheduler_page(redis_client, REF).as_json().schedulers[0].pending_job_id == run_id


@pytest.mark.parametrize(
    ("change", "note"),
    [
        ({"name": None}, "no job name"),
        ({"pattern": "every full moon", "every": None}, "cannot be read"),
        ({"every": "soon"}, "every is not a valid number"),
        ({"every": None}, "neither a cron pattern nor an every"),
        ({"pattern": "* * * * *"}, "both a cron pattern and an every"),
        ({"tz": "Mars/Olympus"}, "time zone 'Mars/Olympus' is unknown"),
        ({"data": "{not json"}, "template data is not valid JSON"),
        ({"opts": "[1, 2]"}, "template options are not a JSON object"),
        ({"ic": "many"}, "iteration count is not a valid number"),
        ({"ic": None}, "iteration count (ic) is missing"),
        ({"limit": "-3"}, "limit is not a valid number"),
        ({"endDate": "tomorrow"}, "end date is not a valid number"),
    ],
)
def test_a_malformed_definition_is_listed_with_a_note_saying_what_is_wrong(
    redis_client: Redis, change: dict[str, str | None], note: str
) -> None:
    JobSchedulers(REF.name, redis_client).upsert(
        "s", Repeat(every_ms=1000), name="n", data={"a": 1}
    )
    definition = KEYS.repeat_scheduler("s")
    for name, value in change.items():
        if value is None:
            redis_client.hdel(definition, name)
        else:
            redis_client.hset(definition, name, value)
    row = rows_by_id(redis_client)["s"]
    assert any(note in text for text in row.notes), row.notes
    assert not row.can_run_now


def test_a_definition_key_of_another_type_or_missing_is_a_row_with_a_note(
    redis_client: Redis,
) -> None:
    redis_client.zadd(KEYS.repeat, {"stringy": 10, "ghost": 20, "fine": 30})
    redis_client.set(KEYS.repeat_scheduler("stringy"), "not a hash")
    redis_client.hset(
        KEYS.repeat_scheduler("fine"), mapping={"name": "f", "every": "10", "ic": "1"}
    )
    rows = rows_by_id(redis_client)
    assert "something other than a hash" in rows["stringy"].notes[0]
    assert "is missing" in rows["ghost"].notes[0]
    assert rows["fine"].notes == []
    # A score no writer makes (inf) is a row without a next run, not an error.
    redis_client.zadd(KEYS.repeat, {"fine": float("inf")})
    assert rows_by_id(redis_client)["fine"].next_run_ms is None


def test_a_huge_template_is_not_read_for_the_list_only_its_size_said(
    redis_client: Redis,
) -> None:
    JobSchedulers(REF.name, redis_client).upsert(
        "big", Repeat(every_ms=1000), name="n", data={"blob": "x" * (10 * 1024 * 1024)}
    )
    row = rows_by_id(redis_client)["big"]
    assert row.data.text is None
    assert row.data.size > TEMPLATE_DISPLAY_LIMIT
    assert "bytes, not shown here" in template_preview(row.data)


def test_a_page_of_10_000_schedulers_reads_only_that_page(redis_client: Redis) -> None:
    pipe = redis_client.pipeline(transaction=False)
    for n in range(10_000):
        pipe.zadd(KEYS.repeat, {f"s{n:05}": 1_000_000 + n})
        pipe.hset(
            KEYS.repeat_scheduler(f"s{n:05}"),
            mapping={"name": "n", "every": "1000", "ic": "1", "data": '{"n":1}'},
        )
    pipe.execute()
    redis_client.config_resetstat()
    page = scheduler_page(redis_client, REF, start=5_000, size=50)
    stats = redis_client.info("commandstats")
    assert page.total == 10_000
    assert [row.scheduler_id for row in page.rows] == [f"s{n:05}" for n in range(5_000, 5_050)]
    assert stats["cmdstat_hmget"]["calls"] == 50
    assert stats["cmdstat_hget"]["calls"] == 50  # the small templates shown
    assert stats["cmdstat_zrange"]["calls"] == 1


@pytest.mark.parametrize(
    ("every_ms", "said"),
    [
        (1500, "every 1.5 s"),
        (250, "every 250 ms"),
        (90_061, "every 90,061 ms"),
        (7_200_000, "every 2 h"),
    ],
)
def test_an_every_is_said_in_the_unit_that_reads_best(
    redis_client: Redis, every_ms: int, said: str
) -> None:
    JobSchedulers(REF.name, redis_client).upsert("s", Repeat(every_ms=every_ms), name="n")
    assert rows_by_id(redis_client)["s"].schedule == said


def test_a_page_costs_three_commands_a_scheduler_and_one_for_its_templates(
    redis_client: Redis,
) -> None:
    # redis-py packs and parses each command in Python: at six a row (an
    # EXISTS per row, an HGET per template) the read was a third of the tab.
    pipe = redis_client.pipeline(transaction=False)
    for n in range(50):
        pipe.zadd(KEYS.repeat, {f"s{n:02}": 1_000_000 + n})
        pipe.hset(
            KEYS.repeat_scheduler(f"s{n:02}"),
            mapping={"name": "n", "every": "1000", "ic": "1", "data": '{"n":1}', "opts": "{}"},
        )
    # A hash holding none of the fields read, and no hash at all: told apart.
    pipe.zadd(KEYS.repeat, {"odd": 2_000_000, "gone": 2_000_001})
    pipe.hset(KEYS.repeat_scheduler("odd"), "unrelated", "x")
    pipe.execute()
    redis_client.config_resetstat()
    page = scheduler_page(redis_client, REF, start=0, size=52)
    stats = redis_client.info("commandstats")
    calls = sum(
        entry["calls"]
        for name, entry in stats.items()
        if not name.startswith(("cmdstat_config", "cmdstat_info"))
    )
    assert calls <= 4 * 52 + 2, stats
    rows = {row.scheduler_id: row for row in page.rows}
    assert [row.scheduler_id for row in page.rows][-2:] == ["odd", "gone"]
    assert (rows["s07"].data.text, rows["s07"].opts.text) == ('{"n":1}', "{}")
    assert rows["odd"].notes[0] == "its definition has no job name"
    assert rows["gone"].notes == ["its definition hash repeat:gone is missing"]
