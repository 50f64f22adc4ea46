"""The schedulers tab of the queue page: what it shows, run now and remove
(act permission, audited, confirmed), and broken definitions refused cleanly."""

from __future__ import annotations

import logging
import re
from collections.abc import Callable
from typing import Any

import pytest
from redis import Redis

from dashboard.models import AuditEntry
from queues.queue import Queue
from queues.read.refs import QueueRef
from queues.schedulers import JobSchedulers, Repeat
from tests.template_work import counted_lookups

REF = QueueRef("bull", "emails")
PAGE_URL = "/queues/bull/emails/schedulers/"
ACTION_URL = PAGE_URL + "actions/"


@pytest.fixture
def schedulers(dashboard_redis: Redis) -> JobSchedulers:
    # The queue exists for discovery once it has a job.
    Queue(REF.name, dashboard_redis).add("seed", {})
    return JobSchedulers(REF.name, dashboard_redis)


@pytest.fixture
def actor(client_as: Callable[[str | None], Any]) -> Any:
    return client_as("actor")


def _messages(response: Any) -> list[str]:
    return [str(m) for m in response.context["messages"]]


def _snapshot(client: Redis) -> dict[bytes, bytes | None]:
    return {key: client.dump(key) for key in client.keys("*") if not key.endswith(b":events")}


def test_the_tab_lists_schedulers_with_schedule_next_run_runs_and_template(
    schedulers: JobSchedulers, actor: Any
) -> None:
    schedulers.upsert(
        "nightly", Repeat(pattern="0 3 * * *", tz="Europe/Paris", limit=30), name="report",
        data={"to": "ops@example.com"},
    )  # fmt: skip
    html = actor.get(PAGE_URL).content.decode()
    assert 'aria-current="page">schedulers</a>' in html
    row = re.search(r'<tr data-job-id="nightly".*?</tr>', html, re.DOTALL)
    assert row is not None
    text = re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", row.group(0)))
    assert "job scheduler" in text
    assert "cron 0 3 * * *" in text
    assert "Europe/Paris" in text
    assert re.search(r"in \d+ (h|min)", text)
    assert "UTC" in text  # the absolute time beside the relative one
    assert "1 of 30" in text
    assert "report" in text
    assert "ops@example.com" in text
    assert "Run now…" in text
    assert "Remove…" in text
    assert 'data-confirm="Remove job scheduler nightly?' in row.group(0)


def test_a_viewer_sees_the_list_without_the_actions(
    schedulers: JobSchedulers, client_as: Callable[[str | None], Any]
) -> None:
    schedulers.upsert("s", Repeat(every_ms=60_000), name="n")
    viewer = client_as("viewer")
    html = viewer.get(PAGE_URL).content.decode()
    assert 'data-job-id="s"' in html
    assert "Run now" not in html
    response = viewer.post(ACTION_URL, {"action": "remove", "id": "s"})
    assert response.status_code == 403
    assert schedulers.connection.zscore(REF.keys.repeat, "s") is not None


def test_run_now_adds_a_job_and_is_audited(
    schedulers: JobSchedulers, actor: Any, caplog: pytest.LogCaptureFixture
) -> None:
    schedulers.upsert("s", Repeat(pattern="0 0 1 1 *"), name="report", data={"a": 1})
    caplog.set_level(logging.INFO, logger="echomq.audit")
    response = actor.post(ACTION_URL, {"action": "run_now", "id": "s"}, follow=True)
    (message,) = _messages(response)
    job_id = message.rsplit("job ", 1)[1].split(" ")[0]
    assert message == f"Job scheduler s ran now: job {job_id} added"
    job = Queue(REF.name, schedulers.connection).get_job(job_id)
    assert job is not None
    assert job.data == {"a": 1}
    entry = AuditEntry.objects.get(action="run_now")
    assert (entry.user, entry.queue, entry.jobs, entry.count) == (
        "actor",
        "bull:emails",
        "scheduler=s",
        1,
    )
    assert "user=actor action=run_now queue=bull:emails jobs=scheduler=s result=ok" in caplog.text


def test_remove_deletes_the_scheduler_and_its_pending_run(
    schedulers: JobSchedulers, actor: Any
) -> None:
    pending = schedulers.upsert("s", Repeat(pattern="0 0 1 1 *"), name="n")
    response = actor.post(ACTION_URL, {"action": "remove", "id": "s"}, follow=True)
    assert _messages(response) == [f"Job scheduler s removed with its pending run {pending}"]
    assert 'data-job-id="s"' not in response.content.decode()
    assert Queue(REF.name, schedulers.connection).get_job(pending) is None
    again = actor.post(ACTION_URL, {"action": "remove", "id": "s"}, follow=True)
    assert _messages(again) == ["Job scheduler s no longer exists — it was removed already"]
    assert AuditEntry.objects.filter(action="remove").count() == 2


def test_a_broken_scheduler_is_shown_with_its_note_and_run_now_refuses_changing_nothing(
    schedulers: JobSchedulers, actor: Any, dashboard_redis: Redis
) -> None:
    schedulers.upsert("bad", Repeat(every_ms=60_000), name="n", data={"a": 1})
    dashboard_redis.hset(REF.keys.repeat_scheduler("bad"), "data", "{oops")
    dashboard_redis.zadd(REF.keys.repeat, {"nohash": 1})
    page = actor.get(PAGE_URL)
    assert page.status_code == 200
    html = page.content.decode()
    assert "template data is not valid JSON" in html
    assert "definition hash repeat:nohash is missing" in html
    before = _snapshot(dashboard_redis)
    for scheduler_id in ("bad", "nohash"):
        response = actor.post(ACTION_URL, {"action": "run_now", "id": scheduler_id}, follow=True)
        assert response.status_code == 200
        (message,) = _messages(response)
        assert message.startswith(f"Job scheduler {scheduler_id} was not run: ")
    assert _snapshot(dashboard_redis) == before


def test_a_greyed_run_now_says_why_beside_it_and_is_described_by_those_words(
    schedulers: JobSchedulers, actor: Any, dashboard_redis: Redis
) -> None:
    """The reason sat in a tooltip only (no phone, no keyboard, no screen
    reader reaches it) while the row's badge or note was elsewhere."""
    schedulers.upsert("fine", Repeat(every_ms=60_000), name="n", data={"a": 1})
    schedulers.upsert("bad", Repeat(every_ms=60_000), name="n", data={"a": 1})
    dashboard_redis.hset(REF.keys.repeat_scheduler("bad"), "data", "{oops")
    legacy = "sweep::::*/5 * * * *"
    dashboard_redis.zadd(REF.keys.repeat, {legacy: 4_102_444_800_000})
    html = actor.get(PAGE_URL).content.decode()

    def run_now(scheduler_id: str) -> tuple[str, str]:
        row = re.search(rf'<tr data-job-id="{re.escape(scheduler_id)}".*?</tr>', html, re.DOTALL)
        assert row is not None
        button = re.search(r'<button type="submit" form="scheduler-run_now"[^>]*>', row.group(0))
        assert button is not None
        return button.group(0), row.group(0)

    for scheduler_id, reason in (
        ("bad", "Cannot run now: its definition is broken (see the note)"),
        (legacy, "Cannot run now: a legacy repeatable keeps no template"),
    ):
        button, row = run_now(scheduler_id)
        assert " disabled" in button
        assert "title=" not in button
        described = re.search(r'aria-describedby="([^"]+)"', button)
        assert described is not None
        assert html.count(f'id="{described.group(1)}"') == 1
        assert f'id="{described.group(1)}">{reason}</div>' in row
    button, _ = run_now("fine")
    assert "disabled" not in button
    assert "aria-describedby" not in button


def test_a_definition_key_of_another_type_refuses_both_actions_and_changes_nothing(
    schedulers: JobSchedulers, actor: Any, dashboard_redis: Redis
) -> None:
    dashboard_redis.zadd(REF.keys.repeat, {"odd": 1})
    dashboard_redis.set(REF.keys.repeat_scheduler("odd"), "a string")
    assert actor.get(PAGE_URL).status_code == 200
    before = _snapshot(dashboard_redis)
    for action in ("run_now", "remove"):
        response = actor.post(ACTION_URL, {"action": action, "id": "odd"}, follow=True)
        assert response.status_code == 200
        (message,) = _messages(response)
        assert "Nothing was changed" in message
    assert _snapshot(dashboard_redis) == before


def test_a_scheduler_s_runs_show_in_the_delayed_list_and_open_as_jobs(
    schedulers: JobSchedulers, actor: Any
) -> None:
    pending = schedulers.upsert("nightly", Repeat(pattern="0 3 * * *"), name="report")
    listed = actor.get("/queues/bull/emails/?state=delayed").content.decode()
    assert f'data-job-id="{pending}"' in listed
    page = actor.get(f"/queues/bull/emails/job/{pending}")
    assert page.status_code == 200
    assert "report" in page.content.decode()


def test_the_tab_costs_the_template_engine_the_same_at_20_rows_and_at_50(
    schedulers: JobSchedulers, actor: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The template's row loop was most of the tab's time (docs/benchmarks.md):
    # the rows are built in Python (dashboard.schedulers.rows).
    for n in range(51):  # a next page at both sizes: the pagers match
        schedulers.upsert(f"s{n:02d}", Repeat(every_ms=60_000 * (n + 1)), name="n", data={"n": n})
    lookups = {}
    for size in (20, 50):
        url = f"{PAGE_URL}?size={size}"
        actor.get(url)  # warm: the first render loads templates
        with counted_lookups(monkeypatch) as count:
            html = actor.get(url).content.decode()
        lookups[size] = count[0]
        assert html.count("<tr data-job-id=") == size
    assert lookups[50] == lookups[20]


def test_markup_in_a_scheduler_is_escaped_in_its_row(
    schedulers: JobSchedulers, actor: Any, dashboard_redis: Redis
) -> None:
    xss = "<script>alert(1)</script>"
    schedulers.upsert(
        "x<b>'\"", Repeat(every_ms=60_000), name=xss, data={"html": xss}, opts={"attempts": 2}
    )
    dashboard_redis.hset(REF.keys.repeat_scheduler("x<b>'\""), mapping={"tz": xss, "every": xss})
    html = actor.get(PAGE_URL).content.decode()
    assert "<script>" not in html
    assert "<b>" not in html
    row = re.search(r'<tr data-job-id="x&lt;b&gt;&#x27;&quot;".*?</tr>', html, re.DOTALL)
    assert row is not None
    # name, data, time zone, the note quoting the bad every, and both buttons' questions
    assert row.group(0).count("&lt;script&gt;alert(1)&lt;/script&gt;") >= 3
    assert "&lt;script&gt;alert(1)&lt;/scr" in row.group(0)
    assert "Run x&lt;b&gt;&#x27;&quot; now? A &lt;script&gt;" in row.group(0)
