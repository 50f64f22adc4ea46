"""Editing a job's data, duplicating a job and adding one, from the pages and
the API (dashboard.acting.job_edits): what each writes, the audit entry with its
diff, and every bad input answered with a clear error that changed nothing."""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from typing import Any

import pytest
from django.test import Client
from redis import Redis

from dashboard.models import AuditEntry
from queues.queue import Queue
from queues.read.refs import QueueRef
from tests.dashboard_seed import now_ms, seed_job, seed_metrics
from tests.test_out_of_memory import redis_full
from tests.test_update_data import snapshot
from tests.transition_helpers import fetch

REF = QueueRef("bull", "emails")
KEYS = REF.keys
PAGE = "/queues/bull/emails/"
API = "/api/queues/bull/emails/"
TEN_MB = "x" * (10 * 1024 * 1024)


@pytest.fixture
def editor(dashboard_redis: Redis, client_as: Callable[[str | None], Any]) -> Client:
    client: Client = client_as("editor")
    return client


@pytest.fixture
def queue(dashboard_redis: Redis) -> Queue:
    return Queue("emails", dashboard_redis)


def post_json(client: Client, url: str, body: Any) -> Any:
    return client.post(url, json.dumps(body), content_type="application/json")


def messages_of(response: Any) -> list[str]:
    return [str(message) for message in response.context["messages"]]


def data_of(client: Redis, job_id: str) -> Any:
    return json.loads(client.hget(KEYS.job(job_id), "data") or b"null")


# --------------------------------------------------------------------------- edit


def test_the_job_page_offers_the_editor_and_saving_changes_the_data(
    editor: Client, dashboard_redis: Redis
) -> None:
    seed_job(dashboard_redis, KEYS, "5", state="failed", data={"to": "wrong@example.com"})
    page = editor.get(PAGE + "job/5").content.decode()
    assert "data-json-editor" in page
    assert 'action="/queues/bull/emails/edit/"' in page
    assert "wrong@example.com" in page

    response = editor.post(
        PAGE + "edit/", {"id": "5", "data": '{"to": "right@example.com"}'}, follow=True
    )
    assert response.redirect_chain[-1][0] == PAGE + "job/5"
    assert messages_of(response) == [
        "Job 5's data was changed (the job is failed); its next run reads the new data"
    ]
    assert data_of(dashboard_redis, "5") == {"to": "right@example.com"}
    # The change and its diff on the job's page, from the audit trail.
    html = response.content.decode()
    assert "Changes by hand" in html
    assert "wrong@example.com" in html.split("Changes by hand")[1]


def test_changes_made_to_an_earlier_job_of_the_same_id_are_not_shown(
    editor: Client, dashboard_redis: Redis
) -> None:
    """A queue whose id counter started over gives a new job an old id: its
    page listed the old job's edits under "Changes by hand"."""
    seed_job(dashboard_redis, KEYS, "5", state="failed", data={"to": "old@example.com"})
    editor.post(PAGE + "edit/", {"id": "5", "data": '{"to": "older-fix@example.com"}'})
    assert "Changes by hand" in editor.get(PAGE + "job/5").content.decode()
    dashboard_redis.delete(KEYS.job("5"))
    dashboard_redis.zrem(KEYS.failed, "5")
    seed_job(dashboard_redis, KEYS, "5", state="wait", data={"n": 0})
    # Created after the edit by more than the clocks' margin.
    dashboard_redis.hset(KEYS.job("5"), "timestamp", now_ms() + 5_000)
    page = editor.get(PAGE + "job/5").content.decode()
    assert "older-fix@example.com" not in page
    assert "Changes by hand" not in page


def test_an_edit_is_audited_with_a_diff_of_the_data(editor: Client, dashboard_redis: Redis) -> None:
    seed_job(dashboard_redis, KEYS, "5", state="delayed", data={"to": "a", "keep": 1})
    answer = post_json(editor, API + "edit/", {"id": "5", "data": {"to": "b", "keep": 1}})
    assert answer.status_code == 200
    body = answer.json()
    assert body["action"] == "edit_data"
    assert body["id"] == "5"
    assert body["source"] is None
    (entry,) = AuditEntry.objects.all()
    assert (entry.user, entry.action, entry.queue, entry.jobs, entry.count) == (
        "editor",
        "edit_data",
        "bull:emails",
        "5",
        1,
    )
    assert entry.diff == body["diff"]
    lines = entry.diff.splitlines()
    assert lines[:2] == ["--- before", "+++ after"]
    assert '-    "to": "a",' in lines
    assert '+    "to": "b",' in lines
    assert '     "keep": 1' in lines  # context, unchanged


@pytest.mark.parametrize(
    ("data", "words"),
    [
        ("{not json", "not valid JSON (line 1, column 2)"),
        ('{"n": NaN}', "NaN is not a number JSON allows"),
        ('{"n": 1e400}', "too large for JSON data"),
        ("[" * 100_000 + "]" * 100_000, "nested too deeply"),
        ("", "not valid JSON"),
    ],
)
def test_data_that_is_not_json_is_refused_on_the_page_and_nothing_changes(
    editor: Client, dashboard_redis: Redis, data: str, words: str
) -> None:
    seed_job(dashboard_redis, KEYS, "5", state="failed", data={"old": 1})
    before = snapshot(dashboard_redis)
    response = editor.post(PAGE + "edit/", {"id": "5", "data": data}, follow=True)
    assert response.status_code == 200
    (message,) = messages_of(response)
    assert words in message
    assert snapshot(dashboard_redis) == before
    assert not AuditEntry.objects.exists()


def test_data_that_is_not_json_is_refused_by_the_api_as_json(
    editor: Client, dashboard_redis: Redis
) -> None:
    seed_job(dashboard_redis, KEYS, "5", state="failed", data={"old": 1})
    before = snapshot(dashboard_redis)
    answers = [
        editor.post(API + "edit/", {"id": "5", "data": "{nope"}),  # a form: data is JSON text
        editor.post(API + "edit/", '{"id": "5", "data": NaN}', content_type="application/json"),
        editor.post(API + "edit/", "[1, 2]", content_type="application/json"),  # not an object
        post_json(editor, API + "edit/", {"id": "5"}),  # no data
        post_json(editor, API + "edit/", {"id": ["5"], "data": {}}),
        post_json(editor, API + "edit/", {"id": "a:b", "data": {}}),
        post_json(editor, API + "edit/", {"id": "5", "data": "\ud800"}),
    ]
    for answer in answers:
        assert answer.status_code == 400, answer.content
        assert answer["Content-Type"] == "application/json"
        assert answer.json()["error"]["code"] == "bad_request"
    assert snapshot(dashboard_redis) == before


def test_a_10_mb_edit_is_refused_before_redis_whatever_the_body_limit(
    editor: Client, dashboard_redis: Redis, settings: Any
) -> None:
    seed_job(dashboard_redis, KEYS, "5", state="failed", data={"old": 1})
    before = snapshot(dashboard_redis)
    # Django's own body limit (2.5 MB) answers first ...
    answer = post_json(editor, API + "edit/", {"id": "5", "data": TEN_MB})
    assert answer.status_code == 413
    assert answer.json()["error"]["code"] == "body_too_large"
    # ... and where a project raised it, the dashboard's own data limit.
    settings.DATA_UPLOAD_MAX_MEMORY_SIZE = 50 * 1024 * 1024
    answer = post_json(editor, API + "edit/", {"id": "5", "data": TEN_MB})
    assert answer.status_code == 413
    error = answer.json()["error"]
    assert error["code"] == "data_too_large"
    assert "10,485,762 bytes" in error["message"]
    assert "1,048,576" in error["message"]
    page = editor.post(PAGE + "edit/", {"id": "5", "data": json.dumps(TEN_MB)}, follow=True)
    assert "the dashboard writes at most 1,048,576" in messages_of(page)[0]
    assert snapshot(dashboard_redis) == before


@pytest.mark.parametrize("state", ["active", "completed", "waiting-children"])
def test_a_job_in_a_state_it_may_not_be_edited_in_is_refused_in_plain_words(
    editor: Client, dashboard_redis: Redis, state: str
) -> None:
    seed_job(dashboard_redis, KEYS, "5", state=state, data={"old": 1})
    html = editor.get(PAGE + "job/5").content.decode()
    assert "data-json-editor" not in html
    assert "can be edited while the job is waiting, prioritized, delayed or failed" in html
    before = snapshot(dashboard_redis)
    answer = post_json(editor, API + "edit/", {"id": "5", "data": {"new": 1}})
    assert answer.status_code == 409
    error = answer.json()["error"]
    assert error["code"] == "job_not_in_state"
    assert error["message"].startswith("Job 5's data was not changed: ")
    assert snapshot(dashboard_redis) == before


def test_an_edit_racing_a_worker_is_refused_and_the_page_says_why(
    editor: Client, dashboard_redis: Redis, queue: Queue
) -> None:
    """The page was loaded while the job waited; a worker took it before the save."""
    seed_job(dashboard_redis, KEYS, "5", data={"old": 1})
    assert "data-json-editor" in editor.get(PAGE + "job/5").content.decode()
    assert fetch(dashboard_redis, KEYS).job_id == "5"  # the worker's pickup
    before = snapshot(dashboard_redis)
    response = editor.post(PAGE + "edit/", {"id": "5", "data": '{"new": 1}'}, follow=True)
    assert messages_of(response) == [
        "Job 5's data was not changed: a worker took it (it is active now). Only waiting, "
        "prioritized, delayed and failed jobs can be edited."
    ]
    assert snapshot(dashboard_redis) == before
    assert data_of(dashboard_redis, "5") == {"old": 1}
    # The refusal is in the audit trail too, with no diff.
    (entry,) = AuditEntry.objects.all()
    assert (entry.action, entry.count, entry.diff) == ("edit_data", 0, "")


def test_a_missing_job_and_a_corrupt_job_hash_are_clear_errors(
    editor: Client, dashboard_redis: Redis
) -> None:
    dashboard_redis.set(KEYS.job("str"), "not a hash")
    dashboard_redis.zadd(KEYS.failed, {"str": 1})
    seed_job(dashboard_redis, KEYS, "5", state="failed")
    before = snapshot(dashboard_redis)
    gone = post_json(editor, API + "edit/", {"id": "gone", "data": {}})
    assert gone.status_code == 404
    assert gone.json()["error"]["code"] == "job_not_exist"
    broken = post_json(editor, API + "edit/", {"id": "str", "data": {}})
    assert broken.status_code == 409
    assert broken.json()["error"] == {
        "code": "job_broken",
        "message": "Job str's data was not changed: its key is a string, not a job hash",
    }
    page = editor.post(PAGE + "edit/", {"id": "str", "data": "{}"}, follow=True)
    assert page.status_code == 404  # back on its page, which shows no job for a string
    assert "its key is a string" in messages_of(page)[0]
    nope = post_json(editor, "/api/queues/bull/nope/edit/", {"id": "5", "data": {}})
    assert nope.status_code == 404
    assert snapshot(dashboard_redis) == before


def test_a_full_redis_refuses_the_edit_with_507(editor: Client, dashboard_redis: Redis) -> None:
    seed_job(dashboard_redis, KEYS, "5", state="failed", data={"old": 1})
    with redis_full(dashboard_redis):
        answer = post_json(editor, API + "edit/", {"id": "5", "data": {"new": 1}})
    assert answer.status_code == 507
    assert answer.json()["error"]["code"] == "redis_out_of_memory"
    assert data_of(dashboard_redis, "5") == {"old": 1}


# --------------------------------------------------------------------------- duplicate


def test_duplicate_makes_a_new_job_with_the_same_name_data_and_options(
    editor: Client, dashboard_redis: Redis, queue: Queue
) -> None:
    opts = {
        "attempts": 3,
        "backoff": {"type": "fixed", "delay": 10},
        "jobId": "custom",
        "de": {"id": "d"},
    }
    seed_job(
        dashboard_redis, KEYS, "custom", state="failed", name="send", data={"to": "a"}, opts=opts
    )
    response = editor.post(PAGE + "duplicate/", {"id": "custom"}, follow=True)
    (message,) = messages_of(response)
    new_id = message.rsplit(" ", 1)[1]
    assert message == f"Job custom duplicated as job {new_id}"
    assert response.redirect_chain[-1][0] == PAGE + f"job/{new_id}"
    copy = queue.get_job(new_id)
    assert copy is not None
    assert (copy.name, copy.data) == ("send", {"to": "a"})
    # Same options, less the id and deduplication that would make the add a no-op.
    assert copy.opts == {"attempts": 3, "backoff": {"type": "fixed", "delay": 10}}
    assert queue.get_state(new_id) == "wait"
    assert queue.get_state("custom") == "failed"
    (entry,) = AuditEntry.objects.all()
    assert (entry.action, entry.jobs) == ("duplicate", new_id)
    assert '+  "send"' in entry.diff
    assert '+    "to": "a"' in entry.diff

    answer = post_json(editor, API + "duplicate/", {"id": "custom"})
    assert answer.status_code == 201
    assert answer.json()["source"] == "custom"
    assert answer.json()["id"] not in ("custom", new_id)


def test_duplicating_a_missing_or_broken_job_is_a_clear_error(
    editor: Client, dashboard_redis: Redis
) -> None:
    dashboard_redis.set(KEYS.job("str"), "not a hash")
    seed_job(dashboard_redis, KEYS, "raw", fields={"data": "{not json"})
    seed_job(dashboard_redis, KEYS, "badopts", fields={"opts": "[1]"})
    before = snapshot(dashboard_redis)
    cases = {
        "gone": (404, "job_not_exist"),
        "str": (409, "job_broken"),
        "raw": (409, "job_broken"),
        "badopts": (409, "job_broken"),
    }
    for job_id, (status, code) in cases.items():
        answer = post_json(editor, API + "duplicate/", {"id": job_id})
        assert (answer.status_code, answer.json()["error"]["code"]) == (status, code), job_id
    assert (
        "data is not valid JSON (edit its data first)"
        in post_json(editor, API + "duplicate/", {"id": "raw"}).json()["error"]["message"]
    )
    page = editor.post(PAGE + "duplicate/", {"id": "str"}, follow=True)
    assert "its key is not a job hash" in messages_of(page)[0]
    assert snapshot(dashboard_redis) == before


@pytest.mark.parametrize(("form", "undone"), [("edit/", "changed"), ("duplicate/", "duplicated")])
def test_a_form_posting_no_job_id_goes_back_to_the_queue_and_says_nothing_was_done(
    editor: Client, dashboard_redis: Redis, form: str, undone: str
) -> None:
    seed_job(dashboard_redis, KEYS, "5", state="failed", data={"old": 1})
    before = snapshot(dashboard_redis)
    for bad in ("", "a:b"):
        response = editor.post(PAGE + form, {"id": bad, "data": "{}"})
        assert response.status_code == 302
        assert response["Location"] == PAGE
        page = editor.get(response["Location"])
        assert messages_of(page) == [f"That is not a job id: nothing was {undone}"]
    assert snapshot(dashboard_redis) == before


# --------------------------------------------------------------------------- add


def test_the_queue_page_adds_a_job_with_its_options(
    editor: Client, dashboard_redis: Redis, queue: Queue
) -> None:
    seed_job(dashboard_redis, KEYS, "1")  # the queue exists
    html = editor.get(PAGE).content.decode()
    assert 'action="/queues/bull/emails/add/"' in html
    form = {
        "name": "send",
        "data": '{"to": "x"}',
        "delay": "60000",
        "priority": "",
        "attempts": "3",
    }
    response = editor.post(PAGE + "add/", form, follow=True)
    (message,) = messages_of(response)
    job_id = message.split()[1]
    assert message == f"Job {job_id} (send) added to emails"
    job = queue.get_job(job_id)
    assert job is not None
    assert (job.name, job.data, job.opts) == ("send", {"to": "x"}, {"delay": 60000, "attempts": 3})
    assert queue.get_state(job_id) == "delayed"
    (entry,) = AuditEntry.objects.all()
    assert (entry.action, entry.jobs, entry.count) == ("add", job_id, 1)


def test_add_and_duplicate_never_overwrite_a_job_when_the_id_counter_fell_behind(
    editor: Client, dashboard_redis: Redis, queue: Queue
) -> None:
    """A queue whose ``id`` counter is gone (a hand DEL, a restored backup)
    while jobs 1 and 2 sit in failed: the new jobs take the next free ids."""
    for job_id in ("1", "2"):
        seed_job(dashboard_redis, KEYS, job_id, state="failed", data={"n": job_id})
    dashboard_redis.delete(KEYS.id)
    dashboard_redis.hset(KEYS.meta, "version", "bullmq:5.53.2")  # the queue is still found
    failed_before = {n: dashboard_redis.hgetall(KEYS.job(n)) for n in ("1", "2")}

    added = post_json(editor, API + "add/", {"name": "send", "data": {"to": "x"}})
    duplicated = post_json(editor, API + "duplicate/", {"id": "2"})

    assert added.json()["message"] == "Job 3 (send) added to emails"
    assert duplicated.json()["message"] == "Job 2 duplicated as job 4"
    assert {n: dashboard_redis.hgetall(KEYS.job(n)) for n in ("1", "2")} == failed_before
    assert queue.get_state("1") == queue.get_state("2") == "failed"
    assert dashboard_redis.lrange(KEYS.wait, 0, -1) == [b"4", b"3"]
    assert dashboard_redis.get(KEYS.id) == b"4"


def test_the_api_adds_a_job_and_refuses_options_it_does_not_add(
    editor: Client, dashboard_redis: Redis, queue: Queue
) -> None:
    seed_job(dashboard_redis, KEYS, "1")  # the queue exists
    answer = post_json(
        editor,
        API + "add/",
        {"name": "send", "data": [1, 2], "opts": {"priority": 4, "lifo": True}},
    )
    assert answer.status_code == 201
    job_id = answer.json()["id"]
    assert queue.get_state(job_id) == "prioritized"
    before = snapshot(dashboard_redis)
    bad = [
        {"name": "", "data": {}},
        {"data": {}},
        {"name": "x" * 1001},
        {"name": "send", "opts": [1]},
        {"name": "send", "opts": "{}"},
        {"name": "send", "opts": {"parent": {"id": "1", "queue": "other:q"}}},
        {"name": "send", "opts": {"jobId": "mine"}},
        {"name": "send", "opts": {"attempts": 0}},
        {"name": "send", "opts": {"delay": -1}},
        {"name": "send", "opts": {"priority": 2**21 + 1}},
        {"name": "send", "opts": {"backoff": {"type": "linear"}}},
        {"name": "send", "opts": {"removeOnFail": "yes"}},
        {"name": "send", "opts": {"lifo": 1}},
    ]
    for body in bad:
        refused = post_json(editor, API + "add/", body)
        assert refused.status_code == 400, body
        assert refused.json()["error"]["code"] == "bad_request"
    page = editor.post(PAGE + "add/", {"name": "send", "data": "{}", "delay": "soon"}, follow=True)
    assert messages_of(page) == ["No job was added: delay must be a whole number"]
    assert snapshot(dashboard_redis) == before
    assert AuditEntry.objects.count() == 1


def test_a_10_mb_add_is_refused(editor: Client, dashboard_redis: Redis, settings: Any) -> None:
    seed_job(dashboard_redis, KEYS, "1")  # the queue exists
    before = snapshot(dashboard_redis)
    settings.DATA_UPLOAD_MAX_MEMORY_SIZE = 50 * 1024 * 1024
    answer = post_json(editor, API + "add/", {"name": "big", "data": TEN_MB})
    assert answer.status_code == 413
    assert answer.json()["error"]["code"] == "data_too_large"
    assert snapshot(dashboard_redis) == before


def test_each_change_is_a_marker_on_the_queue_chart_with_its_words(
    editor: Client, dashboard_redis: Redis
) -> None:
    seed_metrics(dashboard_redis, KEYS, [4] * 10, [1] * 10, now_ms())
    seed_job(dashboard_redis, KEYS, "5", state="failed", data={"old": 1})
    post_json(editor, API + "edit/", {"id": "5", "data": {"new": 1}})
    post_json(editor, API + "duplicate/", {"id": "5"})
    html = editor.get(PAGE + "?state=wait").content.decode()
    chart = html[html.index("<figure") : html.index("</figure>")]
    markers = re.findall(r'<g class="marker" data-marker="([^"]*)">', chart)
    assert [marker.split(" · ", 1)[1] for marker in markers] == [
        "edit data by editor: Job 5&#x27;s data was changed (the job is failed); "
        "its next run reads the new data",
        "duplicate by editor: Job 5 duplicated as job 2",
    ]
