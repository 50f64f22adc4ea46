"""Input that was a 500, each found by hand (issue 22, points 5 to 11 and the
small ones): numbers in other digits, page tokens and cursors past what Redis
or Lua hold, half a character in a search, event fields and timestamps no
writer meant, a legacy scheduler on a broken key, a JSON key twice, control
characters in a job name. tests/test_fuzz_keyspace.py looks for more of
their kind."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any
from urllib.parse import quote

import pytest
from django.test import Client
from redis import Redis

from queues.queue import Queue
from queues.read.refs import QueueRef
from tests.dashboard_seed import seed_job

KEYS = QueueRef("bull", "odd").keys
PAGE, API = "/queues/bull/odd/", "/api/queues/bull/odd/"
# What int() and str.isdigit() take for digits, and Redis and Lua do not.
NOT_ASCII_DIGITS = ["²", "³", "\u0661\u0662", "1_000", "+7"]  # "\u0661\u0662": Arabic-Indic 12
# Blanks around a number: a form field's are trimmed, a URL's are not.
OTHER_DIGITS = [*NOT_ASCII_DIGITS, "7\u00a0", " 7"]


@pytest.fixture
def superuser(dashboard_redis: Redis, client_as: Callable[[str | None], Any]) -> Client:
    seed_job(dashboard_redis, KEYS, "1", state="failed")
    client: Client = client_as("superuser")
    client.raise_request_exception = False  # a crash is a 500 to assert on
    return client


def _post_json(client: Client, url: str, body: str) -> Any:
    return client.post(url, body, content_type="application/json")


def _messages(response: Any) -> list[str]:
    return [str(message) for message in response.context["messages"]]


@pytest.mark.parametrize("digits", NOT_ASCII_DIGITS)
def test_a_number_in_the_add_form_written_with_other_digits_is_refused(
    superuser: Client, dashboard_redis: Redis, digits: str
) -> None:
    """Point 5: "²".isdigit() is True, then int("²") raised; int("١٢") is 12."""
    for field in ("delay", "attempts", "priority"):
        form = {"name": "send", "data": "{}", field: digits}
        answer = superuser.post(PAGE + "add/", form, follow=True)
        assert answer.status_code == 200
        assert _messages(answer) == [f"No job was added: {field} must be a whole number"]
    assert Queue("odd", dashboard_redis).get_counts("wait", "delayed") == {"wait": 0, "delayed": 0}


@pytest.fixture
def parent(dashboard_redis: Redis) -> None:
    seed_job(dashboard_redis, KEYS, "p", state="waiting-children")
    for child in ("c1", "c2"):
        seed_job(dashboard_redis, KEYS, child, fields={"parentKey": KEYS.job("p")})
        dashboard_redis.sadd(KEYS.job("p") + ":dependencies", KEYS.job(child))


@pytest.mark.usefixtures("parent")
@pytest.mark.parametrize(
    "token",
    [
        "².0.0",  # point 6
        "0.\u0663.0",
        "0.18446744073709551616.0",  # a SCAN cursor past 64 bits: Redis refuses it
        "0.0.10001",
        "9.0.0",
        "0.0",
        "-1.0.0",
    ],
)
def test_a_page_of_children_token_that_is_not_one_is_a_400(superuser: Client, token: str) -> None:
    api = superuser.get(API + "flow-children/p", {"page": token})
    assert api.status_code == 400
    assert api.json()["error"]["code"] == "bad_request"
    assert superuser.get(PAGE + "flow-children/p", {"page": token}).status_code == 400


@pytest.mark.usefixtures("parent")
def test_a_page_of_children_token_at_a_64_bit_cursor_is_read(superuser: Client) -> None:
    answer = superuser.get(API + "flow-children/p", {"page": "2.18446744073709551615.0"})
    assert answer.status_code == 200


@pytest.mark.parametrize(
    "cursor",
    [
        "0|999999999999999999999999|0|200|",  # point 7: Lua's "value is not an integer"
        "0|4294967297|0|200|",
        "0|²|0|200|",
        "\u0660|0|0|200|",
        "0|0|²|200|",
        "0|0|0|²|",
        "0|0|9999999999999999|200|",
        "2|0|0|200|",  # wait's keys: wait and paused, no third
        "0|1e400|0|200|x",
        "0|nan|0|200|x",
    ],
)
def test_a_search_cursor_past_what_lua_holds_or_in_other_digits_is_a_bad_query(
    superuser: Client, dashboard_redis: Redis, cursor: str
) -> None:
    seed_job(dashboard_redis, KEYS, "2")
    state = "failed" if cursor.endswith("x") else "wait"
    started = superuser.get(API + "search/", {"state": state, "q": "name ~ x"}).json()
    going_on = {"state": state, "q": "name ~ x", "search": started["search"], "cursor": cursor}
    answer = superuser.get(API + "search/", going_on)
    assert answer.status_code == 400, answer.content
    assert answer.json()["error"]["code"] == "bad_query"


@pytest.mark.parametrize(
    "query", ['data ~ "\\ud800"', 'name ~ "\\ud800"', 'reason = "\\udfff"', 'data.a = "\\ud800"']
)
def test_half_a_character_in_a_quoted_search_value_is_a_bad_query(
    superuser: Client, query: str
) -> None:
    """Point 8: JSON lets a lone surrogate through; UTF-8 (and Redis) cannot hold it."""
    for url in (API + "search/", PAGE + "search/"):
        answer = superuser.get(url, {"state": "failed", "q": query})
        assert answer.status_code == 400, (url, answer.content)
        error = answer.json()["error"]
        assert error == {"code": "bad_query", "message": "The search is not valid Unicode text"}


@pytest.mark.parametrize(
    ("fields", "shown"),
    [
        ({"event": "delayed", "jobId": "1", "delay": "²"}, "²"),  # point 9
        ({"event": "delayed", "jobId": "1", "delay": "9" * 5000}, "9" * 100),
        ({"event": "delayed", "jobId": "1", "delay": "99999999999999999999"}, "until 99999"),
        ({"event": "retries-exhausted", "jobId": "1", "attemptsMade": "³"}, "³"),
        ({"event": "retries-exhausted", "jobId": "1", "attemptsMade": "1"}, "after 1 attempt"),
    ],
)
def test_an_event_field_no_writer_meant_is_shown_as_it_is(
    superuser: Client, dashboard_redis: Redis, fields: dict[str, str], shown: str
) -> None:
    dashboard_redis.xadd(KEYS.events, fields)  # type: ignore[arg-type]
    for url in (PAGE + "events/", PAGE + "job/1"):
        answer = superuser.get(url)
        assert answer.status_code == 200, url
        assert shown in answer.content.decode(), url
    assert "9" * 101 not in superuser.get(PAGE + "events/").content.decode()


@pytest.mark.parametrize(
    "fields",
    [
        {"timestamp": "99999999999999999"},  # point 10: year 3,170,843
        {"timestamp": "-99999999999999999"},
        {"timestamp": "1e300", "processedOn": "-1e300", "finishedOn": "99999999999999999"},
    ],
)
def test_a_job_time_past_any_calendar_is_shown_not_a_500(
    superuser: Client, dashboard_redis: Redis, fields: dict[str, str]
) -> None:
    seed_job(dashboard_redis, KEYS, "t", state="failed", fields=fields)
    for url in (PAGE + "job/t", API + "job/t", PAGE + "?state=failed", API + "jobs/?state=failed"):
        assert superuser.get(url).status_code == 200, url


@pytest.mark.parametrize("scheduler_id", ["legacy::::x", "send:1:::*/5 * * * *", "plain"])
def test_removing_any_scheduler_on_a_broken_repeat_key_is_409_corrupt_key(
    superuser: Client, dashboard_redis: Redis, scheduler_id: str
) -> None:
    """Point 11: a legacy id read its score first, and WRONGTYPE escaped."""
    dashboard_redis.set(KEYS.repeat, "x")
    body = json.dumps({"action": "remove", "id": scheduler_id})
    answer = _post_json(superuser, API + "schedulers/actions/", body)
    assert answer.status_code == 409
    assert answer.json()["error"]["code"] == "corrupt_key"
    page = superuser.post(
        PAGE + "schedulers/actions/", {"action": "remove", "id": scheduler_id}, follow=True
    )
    assert page.status_code == 200
    assert "holds a string, where the queue keeps a sorted set" in _messages(page)[0]
    assert dashboard_redis.get(KEYS.repeat) == b"x"


def test_a_json_body_with_a_key_twice_is_refused_and_changes_nothing(
    superuser: Client, dashboard_redis: Redis
) -> None:
    """json.loads keeps the last: {"id": "1", "id": "nope"} acted on "nope"."""
    seed_job(dashboard_redis, KEYS, "11", state="failed")
    bodies = [
        '{"action": "retry", "id": "11", "id": "nope"}',
        '{"action": "retry", "ids": ["11"], "state": "failed", "state": "completed"}',
    ]
    for body in bodies:
        answer = _post_json(superuser, API + "actions/", body)
        assert answer.status_code == 400
        assert "appears twice in one object" in answer.json()["error"]["message"]
    nested = '{"id": "11", "data": {"to": "a@example.com", "to": "b@example.com"}}'
    assert _post_json(superuser, API + "edit/", nested).status_code == 400
    typed = superuser.post(PAGE + "edit/", {"id": "11", "data": '{"a": 1, "a": 2}'}, follow=True)
    assert "The key 'a' appears twice in one object: nothing was changed" in _messages(typed)
    assert Queue("odd", dashboard_redis).get_counts("failed")["failed"] == 2
    assert dashboard_redis.hget(KEYS.job("11"), "data") == b"{}"


@pytest.mark.parametrize("name", ["\x00", "send\nmail", "tab\there", "\x7f", "\x9b", "\ud800"])
def test_a_job_name_with_control_characters_is_refused(
    superuser: Client, dashboard_redis: Redis, name: str
) -> None:
    answer = _post_json(superuser, API + "add/", json.dumps({"name": name}))
    assert answer.status_code == 400
    if name == "\ud800":  # refused as text Redis cannot hold, before its characters are read
        assert answer.json()["error"]["message"] == "name is not valid Unicode text"
    else:  # a form cannot carry half a character
        assert "control characters" in answer.json()["error"]["message"]
        page = superuser.post(PAGE + "add/", {"name": name, "data": "{}"}, follow=True)
        assert "control characters" in _messages(page)[0]
    assert Queue("odd", dashboard_redis).get_counts("wait")["wait"] == 0


def test_a_job_name_in_any_script_is_still_added(superuser: Client, dashboard_redis: Redis) -> None:
    answer = _post_json(superuser, API + "add/", json.dumps({"name": "envoyer ✉ 送信 \u2028"}))
    assert answer.status_code == 201


def test_every_odd_digit_in_a_list_window_falls_back_to_the_first_page(superuser: Client) -> None:
    """The lists' start/end, sizes and pages: garbage was the default, and still is."""
    for digits in OTHER_DIGITS:
        query = quote(digits)
        answer = superuser.get(f"{API}jobs/?state=failed&start={query}&end={query}")
        assert answer.status_code == 200
        assert (answer.json()["start"], [job["id"] for job in answer.json()["jobs"]]) == (0, ["1"])


@pytest.mark.parametrize("score", [float("inf"), float("-inf"), 1e300])
def test_a_score_no_clock_wrote_is_read_as_the_end_of_time_not_a_500(
    superuser: Client, dashboard_redis: Redis, score: float
) -> None:
    """Found by tests/test_fuzz_keyspace.py: int(inf) in the failed list, the
    error groups and the overview's recent finishes, and the overview's "no
    workers since" at 1e300."""
    seed_job(dashboard_redis, KEYS, "2", state="failed")
    seed_job(dashboard_redis, KEYS, "3", state="completed")
    seed_job(dashboard_redis, KEYS, "4", state="wait")  # no workers: since the newest finish
    dashboard_redis.zadd(KEYS.failed, {"2": score})
    dashboard_redis.zadd(KEYS.completed, {"3": score})
    for url in ("/", PAGE + "?state=failed", PAGE + "?state=completed", PAGE + "errors/"):
        assert superuser.get(url).status_code == 200, url
    for url in (API + "jobs/?state=failed", API + "errors/", API):
        assert superuser.get(url).status_code == 200, url
    groups = superuser.get(API + "errors/").json()
    assert sum(group["count"] for group in groups["groups"]) == 2
    (group,) = {group["key"] for group in groups["groups"]}
    body = json.dumps({"action": "retry", "group": group})
    assert _post_json(superuser, API + "errors/actions/", body).status_code == 200
    assert Queue("odd", dashboard_redis).get_counts("failed", "wait") == {"failed": 0, "wait": 3}


def test_a_failed_set_of_the_wrong_type_counts_as_empty_in_the_overview_sorted_by_failed(
    superuser: Client, dashboard_redis: Redis
) -> None:
    dashboard_redis.delete(KEYS.failed)
    dashboard_redis.hset(KEYS.failed, "not", "a sorted set")
    assert superuser.get("/?sort=failed").status_code == 200


@pytest.mark.parametrize("field", ["data", "progress", "returnvalue", "failedReason"])
def test_half_a_character_in_a_jobs_json_is_shown_as_a_replacement_character(
    superuser: Client, dashboard_redis: Redis, field: str
) -> None:
    """Found by tests/test_fuzz_keyspace.py: '"\\ud800"' is valid JSON whose
    text no UTF-8 page or answer can hold (UnicodeEncodeError, a 500)."""
    seed_job(dashboard_redis, KEYS, "2", state="failed", fields={field: '"\\ud800"'})
    for url in (PAGE + "?state=failed", API + "jobs/?state=failed"):
        assert superuser.get(url).status_code == 200, url
    page, answer = superuser.get(PAGE + "job/2"), superuser.get(API + "job/2")
    assert "\ufffd" in page.content.decode()
    assert "\ufffd" in answer.content.decode()  # written as UTF-8 (dashboard.core.jsonresponse)


def _no_constant(name: str) -> Any:
    raise AssertionError(f"{name} is not JSON")


@pytest.mark.parametrize("stored", ["NaN", "Infinity", "-Infinity"])
def test_a_number_json_has_not_in_a_jobs_fields_is_answered_as_null(
    superuser: Client, dashboard_redis: Redis, stored: str
) -> None:
    """Another writer's progress or return value may be NaN (Python's json
    reads it): the answer must stay JSON, which has no NaN or Infinity."""
    fields = {"progress": stored, "returnvalue": f"[{stored}]"}
    seed_job(dashboard_redis, KEYS, "2", state="completed", fields=fields)
    for url in (API + "job/2", API + "jobs/?state=completed"):
        answer = json.loads(superuser.get(url).content, parse_constant=_no_constant)
        job = answer.get("jobs", [answer])[0]
        assert job["progress"] is None, url
    job_answer = json.loads(superuser.get(API + "job/2").content, parse_constant=_no_constant)
    assert job_answer["returnvalue"] == [None]


def test_an_event_of_an_id_no_job_can_have_links_to_the_page_saying_so(
    superuser: Client, dashboard_redis: Redis
) -> None:
    """Found by tests/test_fuzz_keyspace.py: reverse() refused the id, a 500."""
    dashboard_redis.xadd(KEYS.events, {"event": "failed", "jobId": "line\nbreak"})
    page = superuser.get(PAGE + "events/")
    assert page.status_code == 200
    assert 'href="/queues/bull/odd/job/line%0Abreak"' in page.content.decode()
    assert superuser.get("/queues/bull/odd/job/line%0Abreak").status_code == 404
