"""What a page or API answer costs beyond its Redis reads (issue 12's speed
targets): the signed-in user read once per while, not per request; the
overview's queue URLs reversed once per prefix, not per row; and the cheap
paths giving exactly what the costly ones gave."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.test import Client
from redis import Redis

from dashboard.core import queue_urls, short_cache
from dashboard.shared import charts
from queues import discovery
from queues.read.lists import job_page, job_page_if_exists
from queues.read.refs import QueueRef
from queues.read.workers import forget_client_lists
from tests.dashboard_seed import seed_job
from tests.round_trips import counted_sends

API_QUEUES = "/api/queues/"


@pytest.fixture
def viewer_user(dashboard_redis: Redis, make_user: Callable[..., Any]) -> User:
    return make_user("viewer")  # type: ignore[no-any-return]


def _signed_in(user: User) -> Client:
    client = Client()
    client.force_login(user)
    return client


def test_a_signed_in_user_is_read_from_the_database_once_not_per_request(
    viewer_user: User, django_assert_num_queries: Any
) -> None:
    client = _signed_in(viewer_user)
    assert client.get(API_QUEUES).status_code == 200  # reads the user (and permissions)
    # Nor its session: the process keeps it a few seconds (dashboard.core.short_cache).
    with django_assert_num_queries(0):
        for _ in range(3):
            assert client.get(API_QUEUES).status_code == 200


def test_deactivating_a_user_or_changing_their_password_applies_at_once(
    viewer_user: User, make_user: Callable[..., Any]
) -> None:
    client = _signed_in(viewer_user)
    assert client.get(API_QUEUES).status_code == 200
    viewer_user.is_active = False
    viewer_user.save()  # a save in this process clears the cached user
    # ModelBackend refuses an inactive user: the session no longer signs anyone in.
    assert client.get(API_QUEUES).status_code == 401

    other = make_user("viewer", "other")
    second = _signed_in(other)
    assert second.get(API_QUEUES).status_code == 200
    other.set_password("a new one")
    other.save()
    # The cookie's session hash no longer matches: signed out, as Django does.
    assert second.get(API_QUEUES).status_code == 401


def test_a_change_made_elsewhere_applies_within_the_ttl(
    viewer_user: User, monkeypatch: pytest.MonkeyPatch
) -> None:
    client = _signed_in(viewer_user)
    assert client.get(API_QUEUES).status_code == 200
    # Another process's change: no signal reaches this one.
    User.objects.filter(pk=viewer_user.pk).update(password="!changed-elsewhere")
    assert client.get(API_QUEUES).status_code == 200  # cached, for the TTL at most
    later = short_cache.time.monotonic() + short_cache.TTL_S + 1
    monkeypatch.setattr(short_cache.time, "monotonic", lambda: later)
    assert client.get(API_QUEUES).status_code == 401


def test_logging_out_signs_out_whatever_is_cached(viewer_user: User) -> None:
    client = _signed_in(viewer_user)
    assert client.get(API_QUEUES).status_code == 200
    assert client.post("/logout/").status_code == 302
    assert client.get(API_QUEUES).status_code == 401


def test_the_cache_holds_at_most_max_users(
    dashboard_redis: Redis, make_user: Callable[..., Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(short_cache.users, "most", 3)
    clients = [_signed_in(make_user("viewer", f"user-{n}")) for n in range(5)]
    for client in clients:
        assert client.get(API_QUEUES).status_code == 200
        assert len(short_cache.users) <= 3


def _seed_queues(client: Redis, names: list[str]) -> None:
    pipe = client.pipeline(transaction=False)
    for name in names:
        keys = QueueRef("bull", name).keys
        pipe.hset(keys.job("1"), mapping={"name": "task", "timestamp": 1})
        pipe.lpush(keys.wait, "1")
        pipe.set(keys.id, 1)
    pipe.execute()
    discovery.clear_discovery_cache()


def test_the_overview_reverses_queue_urls_once_per_prefix_not_per_row(
    dashboard_redis: Redis, viewer_user: User, monkeypatch: pytest.MonkeyPatch
) -> None:
    _seed_queues(dashboard_redis, [f"q-{n:03d}" for n in range(100)])
    client = _signed_in(viewer_user)
    reversed_ = []
    original = queue_urls.reverse

    def counting(*args: Any, **kwargs: Any) -> str:
        reversed_.append(args)
        return original(*args, **kwargs)

    monkeypatch.setattr(queue_urls, "reverse", counting)
    html = client.get("/").content.decode()
    assert html.count("data-queue=") == 100
    assert 'href="/queues/bull/q-042/"' in html
    assert len(reversed_) <= 2


def test_the_overviews_round_trips_do_not_grow_with_its_rows(
    dashboard_redis: Redis, viewer_user: User, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Every row below waits with no worker and no metrics: its health reads the
    client list and the newest finished jobs, its line the history's recent
    minutes. Each of those is one round trip for the whole page, so 100 rows
    cost what 10 cost."""

    def sends(count: int) -> int:
        dashboard_redis.flushdb()
        _seed_queues(dashboard_redis, [f"q-{n:03d}" for n in range(count)])
        client = _signed_in(viewer_user)
        client.get("/")  # discovery's first look, out of the way
        forget_client_lists()
        with counted_sends(monkeypatch) as sent:
            html = client.get("/").content.decode()
        assert html.count(">no workers</span>") == count
        return len(sent)

    assert sends(100) == sends(10)


ODD_NAMES = ["plain", "a/b", "til~de", "per%cent", "ünï-çødé", "<i>&'\"", "~s"]


@pytest.mark.parametrize("connection", ["default", "staging"])
def test_made_queue_urls_are_the_ones_reverse_gives(connection: str) -> None:
    made = queue_urls.queue_url_maker("dashboard:queue")
    events = queue_urls.queue_url_maker("dashboard:events")
    for prefix in ("bull", "odd:pre/fix~"):
        for name in ODD_NAMES:
            ref = QueueRef(prefix, name, connection)
            assert made(ref) == queue_urls.queue_url("dashboard:queue", ref)
            assert events(ref) == queue_urls.queue_url("dashboard:events", ref)


@pytest.mark.parametrize(
    ("points", "slots", "direction", "top", "expected"),
    [
        # A minute's count under the 2 px lift still draws 2 px; zeros draw on the line.
        ([0, 1, 50, 0], 30, -1, 100, "80.7,11 80.7,11.0 83.8,9.0 86.9,5.5 90.0,11.0 90.0,11"),
        ([3, 100], 30, 1, 100, "86.9,11 86.9,13.0 90.0,22.0 90.0,11"),
        # One minute: a bar one minute wide.
        ([7], 30, -1, 7, "86.9,11 86.9,0.0 90.0,0.0 90.0,11"),
        ([0, 0], 30, 1, 5, ""),
    ],
)
def test_sparkline_points_are_where_they_were(
    points: list[int], slots: int, direction: int, top: int, expected: str
) -> None:
    assert charts.sparkline_points(points, slots=slots, direction=direction, top=top) == expected


FAILED_JSON = "/api/queues/bull/{}/jobs/?state=failed&start=0&end=49"


def test_the_failed_list_json_asks_whether_the_queue_exists_in_its_first_round_trip(
    dashboard_redis: Redis, viewer_user: User, monkeypatch: pytest.MonkeyPatch
) -> None:
    keys = QueueRef("bull", "mail").keys
    for n in range(60):
        seed_job(dashboard_redis, keys, f"f{n}", state="failed")
    client = _signed_in(viewer_user)
    assert client.get(FAILED_JSON.format("mail")).status_code == 200  # warm: user, scripts
    with counted_sends(monkeypatch) as sent:
        answer = client.get(FAILED_JSON.format("mail"))
    assert answer.status_code == 200
    assert len(answer.json()["jobs"]) == 50
    assert answer.json()["total"] == 60
    assert len(sent) == 2  # the window (and the queue's traces), then the rows


def test_the_failed_list_json_still_tells_a_missing_queue_from_bad_input(
    dashboard_redis: Redis, viewer_user: User, settings: Any
) -> None:
    seed_job(dashboard_redis, QueueRef("bull", "mail").keys, "f1", state="failed")
    client = _signed_in(viewer_user)
    for url, status in [
        (FAILED_JSON.format("nowhere"), 404),
        ("/api/queues/elsewhere/mail/jobs/?state=failed", 404),  # a prefix not served
        ("/api/queues/bull/nowhere/jobs/?state=nonsense", 404),
        ("/api/queues/bull/nowhere/jobs/?state=failed&start=9&end=2", 404),
        ("/api/queues/bull/mail/jobs/?state=nonsense", 400),
        ("/api/queues/bull/mail/jobs/?state=failed&start=9&end=2", 400),
    ]:
        answer = client.get(url)
        assert answer.status_code == status, url
        assert answer["Content-Type"] == "application/json"
    # A configured queue is served whatever Redis holds: an empty page.
    settings.ECHOMQ_QUEUES = ["bull:configured"]
    answer = client.get(FAILED_JSON.format("configured"))
    assert answer.status_code == 200
    assert answer.json()["jobs"] == []
    assert answer.json()["total"] == 0


@pytest.mark.parametrize("state", ["failed", "wait"])
def test_a_page_read_if_the_queue_exists(redis_client: Redis, state: str) -> None:
    ref = QueueRef("bull", "here")
    seed_job(redis_client, ref.keys, "1", state=state)
    redis_client.set(ref.keys.id, 1)
    page = job_page_if_exists(redis_client, ref, state)
    assert page is not None
    assert [row.job.id for row in page.rows] == ["1"]
    # Without meta and id (another tool's queue, a hand DEL) its jobs are still a queue.
    redis_client.delete(ref.keys.id, ref.keys.meta)
    page = job_page_if_exists(redis_client, ref, state)
    assert page is not None
    assert page.total == 1
    # A queue's trace gone, only a job's hash left: no queue, but the read itself works.
    redis_client.delete(ref.keys.state(state))
    assert job_page_if_exists(redis_client, ref, state) is None
    assert job_page(redis_client, ref, state).total == 0


def _evalsha_calls(client: Redis) -> int:
    return int(client.info("commandstats").get("cmdstat_evalsha", {}).get("calls", 0))


def test_a_pages_rows_are_one_script_call_and_a_garbage_key_a_missing_row(
    redis_client: Redis,
) -> None:
    ref = QueueRef("bull", "rows")
    for n in range(50):
        seed_job(redis_client, ref.keys, f"j{n}", state="failed", fields={"failedReason": "x"})
    redis_client.zadd(ref.keys.failed, {"garbage": 10**15})
    redis_client.set(ref.keys.job("garbage"), "not a hash")  # WRONGTYPE for HMGET
    job_page(redis_client, ref, "failed")  # loads the scripts
    before = _evalsha_calls(redis_client)
    page = job_page(redis_client, ref, "failed", size=51)
    assert _evalsha_calls(redis_client) == before + 1
    by_id = {row.job.id: row for row in page.rows}
    assert len(by_id) == 51
    assert by_id["garbage"].missing
    assert by_id["j7"].job.failed_reason == "x"
    assert not by_id["j7"].missing


@pytest.mark.cluster
def test_a_page_on_a_cluster_reads_rows_spread_over_its_nodes(cluster: Redis) -> None:
    ref = QueueRef("bull", "spread")  # no hash tag: the job hashes sit on every node
    for n in range(30):
        seed_job(cluster, ref.keys, f"j{n}", state="failed", fields={"failedReason": "x"})
    page = job_page(cluster, ref, "failed")
    assert sorted(row.job.id for row in page.rows) == sorted(f"j{n}" for n in range(30))
    assert all(row.job.failed_reason == "x" for row in page.rows)
