"""Several Redis servers in one dashboard (dashboard.core.connections): two real
servers, the same queue name on each, every page, answer and action on the
right one; a server that does not answer is one group marked unreachable."""

from __future__ import annotations

import json
import re
import socket
import time
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from django.test import Client
from redis import Redis

from dashboard.checks import check_connections
from dashboard.core import connections
from dashboard.models import AuditEntry
from dashboard.shared import connection_groups
from queues.connection import connect
from queues.flow import FlowJob, FlowProducer
from queues.queue import Queue
from queues.read.refs import QueueRef
from queues.redis_server import LocalRedisServer, server_binary
from tests.dashboard_seed import seed_job, seed_jobs
from tests.e2e.server import free_port

KEYS = QueueRef("bull", "emails").keys
STAGING_PAGE = "/c/staging/queues/bull/emails/"
STAGING_API = "/api/c/staging/queues/bull/emails/"


@pytest.fixture
def viewer(client_as: Callable[[str | None], Client]) -> Client:
    return client_as("viewer")


@pytest.fixture
def actor(client_as: Callable[[str | None], Client]) -> Client:
    return client_as("actor")


@pytest.fixture
def two_servers(dashboard_redis: Redis, staging_redis: Redis) -> tuple[Redis, Redis]:
    """``emails`` on both servers: 2 failed jobs on the default one, 3 on staging."""
    seed_jobs(dashboard_redis, KEYS, "failed", 2)
    seed_jobs(staging_redis, KEYS, "failed", 3)
    return dashboard_redis, staging_redis


def _sections(response: Any) -> list[tuple[Any, list[Any]]]:
    """The overview's groups as (connection group, its rows on the page)."""
    return [(section.group, section.rows) for section in response.context["sections"]]


def test_the_same_queue_on_two_servers_is_two_rows_in_two_groups_with_their_own_counts(
    viewer: Client, two_servers: tuple[Redis, Redis]
) -> None:
    response = viewer.get("/")
    assert response.status_code == 200
    groups = [(group.name, group.reachable, rows) for group, rows in _sections(response)]
    assert [(name, reachable) for name, reachable, _ in groups] == [
        ("default", True),
        ("staging", True),
    ]
    (default_row,), (staging_row,) = (rows for _, _, rows in groups)
    # Each row is its <tr> (presenters.queue_rows): its counts and its link.
    assert 'data-count-state="failed" title="2 failed"' in default_row
    assert 'data-count-state="failed" title="3 failed"' in staging_row
    assert 'href="/queues/bull/emails/" class="queue-name"' in default_row
    assert f'href="{STAGING_PAGE}" class="queue-name"' in staging_row
    html = response.content.decode()
    assert '<tr class="connection-head" data-group="default">' in html
    assert '<tr class="connection-head" data-group="staging">' in html
    # The live updates name each row by its address (dashboard.live.consumer).
    assert 'data-queue="bull:emails"' in html
    assert 'data-queue="staging bull:emails"' in html
    assert f'href="{STAGING_PAGE}?state=failed"' in html


def test_one_server_keeps_the_overview_it_always_had(
    viewer: Client, dashboard_redis: Redis
) -> None:
    seed_jobs(dashboard_redis, KEYS, "failed", 2)
    html = viewer.get("/").content.decode()
    assert "connection-head" not in html
    assert 'data-queue="bull:emails"' in html


def test_the_api_names_each_queues_connection_and_which_answered(
    viewer: Client, two_servers: tuple[Redis, Redis]
) -> None:
    body = viewer.get("/api/queues/").json()
    found = {(q["connection"], q["queue"]): q["counts"]["failed"] for q in body["queues"]}
    assert found == {("default", "bull:emails"): 2, ("staging", "bull:emails"): 3}
    assert body["connections"] == [
        {"name": "default", "reachable": True, "error": None, "failing_over": False, "queues": 1},
        {"name": "staging", "reachable": True, "error": None, "failing_over": False, "queues": 1},
    ]
    queue = viewer.get(STAGING_API).json()
    assert (queue["connection"], queue["counts"]["failed"]) == ("staging", 3)
    jobs = viewer.get(STAGING_API + "jobs/?state=failed").json()
    assert sorted(row["id"] for row in jobs["jobs"]) == ["1", "2", "3"]


def test_a_retry_on_one_servers_queue_moves_the_job_there_and_nothing_on_the_other(
    actor: Client, two_servers: tuple[Redis, Redis]
) -> None:
    default, staging = two_servers
    answer = actor.post(
        STAGING_API + "actions/",
        json.dumps({"action": "retry", "ids": ["1"], "state": "failed"}),
        content_type="application/json",
    )
    assert answer.status_code == 200, answer.content
    assert Queue("emails", staging).get_state("1") == "wait"
    assert Queue("emails", default).get_state("1") == "failed"
    # The page's form too, and the audit names the connection acted on.
    actor.post(STAGING_PAGE + "actions/", {"action": "retry", "ids": ["2"], "state": "failed"})
    assert Queue("emails", staging).get_state("2") == "wait"
    assert Queue("emails", default).get_state("2") == "failed"
    assert [(e.connection, e.queue, e.jobs) for e in AuditEntry.objects.order_by("id")] == [
        ("staging", "bull:emails", "1"),
        ("staging", "bull:emails", "2"),
    ]


def test_the_job_page_and_api_of_the_second_server_show_its_job(
    viewer: Client, dashboard_redis: Redis, staging_redis: Redis
) -> None:
    seed_job(dashboard_redis, KEYS, "7", state="failed", data={"server": "production"})
    seed_job(staging_redis, KEYS, "7", state="failed", data={"server": "staging"})
    page = viewer.get(STAGING_PAGE + "job/7")
    assert page.status_code == 200
    assert page.context["detail"].job.data == {"server": "staging"}
    html = page.content.decode()
    assert 'data-queue="staging bull:emails"' in html
    assert '<span class="badge connection" title="Redis connection">staging</span>' in html
    assert viewer.get(STAGING_API + "job/7").json()["data"] == {"server": "staging"}
    assert viewer.get("/api/queues/bull/emails/job/7").json()["data"] == {"server": "production"}
    # Only on staging: 404 on the default server, found on staging.
    seed_job(staging_redis, QueueRef("bull", "only-staging").keys, "1")
    assert viewer.get("/queues/bull/only-staging/").status_code == 404
    assert viewer.get("/c/staging/queues/bull/only-staging/").status_code == 200


def test_an_unknown_connection_is_a_404_but_only_to_those_who_may_look(
    viewer: Client, client_as: Callable[[str | None], Client], staging_redis: Redis
) -> None:
    assert viewer.get("/c/nope/queues/bull/emails/").status_code == 404
    answer = viewer.get("/api/c/nope/queues/bull/emails/")
    assert (answer.status_code, answer.json()["error"]["code"]) == (404, "not_found")
    # Logged out: sent to log in, as for any page; the API's 401, not which names exist.
    assert client_as(None).get("/c/nope/queues/bull/emails/").status_code == 302
    assert client_as(None).get("/api/c/nope/queues/bull/emails/").status_code == 401


def test_read_only_and_the_act_permission_hold_on_every_connection(
    viewer: Client, actor: Client, two_servers: tuple[Redis, Redis], settings: Any
) -> None:
    _, staging = two_servers
    retry = {"action": "retry", "ids": ["1"], "state": "failed"}
    assert viewer.post(STAGING_API + "actions/", retry).status_code == 403
    settings.ECHOMQ_READ_ONLY = True
    assert actor.post(STAGING_API + "actions/", retry).status_code == 403
    assert Queue("emails", staging).get_state("1") == "failed"


@pytest.fixture
def silent_server() -> Iterator[str]:
    """A TCP port that takes connections and never answers (a server hung, or a
    firewall that drops): the URL of a Redis that will not say it is down."""
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen(16)
        yield f"redis://127.0.0.1:{listener.getsockname()[1]}/0"


@pytest.mark.parametrize("kind", ["stopped", "silent"])
def test_a_server_that_does_not_answer_is_one_group_marked_unreachable(
    viewer: Client,
    dashboard_redis: Redis,
    staging_redis: Redis,
    silent_server: str,
    settings: Any,
    kind: str,
) -> None:
    seed_jobs(dashboard_redis, KEYS, "failed", 2)
    seed_jobs(staging_redis, KEYS, "failed", 3)
    down = f"redis://127.0.0.1:{free_port()}/0" if kind == "stopped" else silent_server
    settings.ECHOMQ_CONNECTIONS = [
        *settings.ECHOMQ_CONNECTIONS,
        {"name": "eu-down", "url": down, "prefixes": ["bull"]},
    ]
    started = time.monotonic()
    page = viewer.get("/")
    # A server that hangs costs its timeouts (dashboard.core.redis): seconds, not more.
    assert time.monotonic() - started < 8
    assert page.status_code == 200
    states = [(group.name, group.reachable, len(rows)) for group, rows in _sections(page)]
    assert states == [("default", True, 1), ("staging", True, 1), ("eu-down", False, 0)]
    html = page.content.decode()
    assert '<tr class="connection-head unreachable" data-group="eu-down">' in html
    assert ">unreachable</span>" in html
    # Asked again only after a while: the next answers do not wait for it.
    started = time.monotonic()
    body = viewer.get("/api/queues/").json()
    assert time.monotonic() - started < 1
    assert [(c["name"], c["reachable"]) for c in body["connections"]] == [
        ("default", True),
        ("staging", True),
        ("eu-down", False),
    ]
    assert body["connections"][2]["error"]
    assert len(body["queues"]) == 2
    # Its queue pages say Redis is unreachable (the 503 every page gives for it).
    answer = viewer.get("/api/c/eu-down/queues/bull/emails/")
    assert (answer.status_code, answer.json()["error"]["code"]) == (503, "redis_unavailable")


def test_an_unreachable_server_is_asked_again_after_a_while(
    viewer: Client, staging_redis: Redis, settings: Any
) -> None:

    port = free_port()
    settings.ECHOMQ_CONNECTIONS = [
        {"name": "eu", "url": f"redis://127.0.0.1:{port}/0", "prefixes": ["bull"]}
    ]
    assert viewer.get("/api/queues/").json()["connections"][1]["reachable"] is False
    eu = LocalRedisServer(server_binary()[0], port=port).start()
    try:
        seed_jobs(connect(eu.url), KEYS, "failed", 1)
        # Within the while: still said to be unreachable, without asking.
        assert viewer.get("/api/queues/").json()["connections"][1]["reachable"] is False
        # The while is over: asked again, it answers.
        for server, (_, *said) in list(connection_groups._unreachable.items()):
            connection_groups._unreachable[server] = (0.0, *said)
        body = viewer.get("/api/queues/").json()
        assert body["connections"][1] == {
            "name": "eu",
            "reachable": True,
            "error": None,
            "failing_over": False,
            "queues": 1,
        }
    finally:
        eu.stop()


BAD_CONNECTIONS = [
    ({"name": "bad name", "url": "redis://a"}, "has name 'bad name'"),
    ({"name": "../x", "url": "redis://a"}, "has name '../x'"),
    ({"name": "default", "url": "redis://a"}, "'default' is named twice"),
    ({"name": "eu"}, "'eu' has no url"),
    ({"name": "eu", "url": " "}, "'eu' has no url"),
    ({"name": "eu", "url": "redis://a", "prefixes": "bull"}, "prefixes must be a list"),
    ({"name": "eu", "url": "redis://a", "prefixes": ["a b"]}, "invalid key prefix"),
    ({"name": "eu", "url": "redis://a", "db": 2}, "unknown fields: db"),
    ({"name": "eu", "url": "http://a:6379"}, "'eu' has a url Redis clients cannot use: Redis URL"),
    (
        {"name": "eu", "url": "redis+sentinel://10.0.0.1:26379"},
        "ends in /<master name> or /<master name>/<db>",
    ),
    ({"name": "eu", "url": "redis+sentinel://10.0.0.1:26379/queues/eu"}, "not 'eu'"),
    ("redis://a", "entry 1 must be an object"),
]


@pytest.mark.parametrize(("entry", "said"), BAD_CONNECTIONS)
def test_a_wrong_connection_setting_is_a_clear_check_error(
    settings: Any, entry: object, said: str
) -> None:
    settings.ECHOMQ_CONNECTIONS = [entry]
    problems = check_connections()
    assert problems
    assert {p.id for p in problems} == {"dashboard.E004"}
    assert any(said in p.msg for p in problems), [p.msg for p in problems]


def test_a_redis_url_clients_cannot_use_is_a_check_error(settings: Any) -> None:
    settings.REDIS_URL = "redis+sentinel://10.0.0.1:26379,10.0.0.2:26379"
    (problem,) = check_connections()
    assert problem.id == "dashboard.E005"
    assert problem.msg == (
        "REDIS_URL is not a URL Redis clients can use: a sentinel URL ends in "
        "/<master name> or /<master name>/<db>"
    )
    settings.REDIS_URL = "redis+sentinel://10.0.0.1:26379,10.0.0.2:26379/queues"
    assert check_connections() == []


def test_a_name_used_twice_and_a_setting_that_is_no_list_are_check_errors(settings: Any) -> None:
    settings.ECHOMQ_CONNECTIONS = [
        {"name": "eu", "url": "redis://a"},
        {"name": "eu", "url": "redis://b"},
    ]
    assert [p.msg for p in check_connections()] == [
        "ECHOMQ_CONNECTIONS connection 'eu' is named twice"
    ]
    settings.ECHOMQ_CONNECTIONS = {"eu": "redis://a"}
    assert [p.msg for p in check_connections()] == [
        "ECHOMQ_CONNECTIONS must be a list of connections"
    ]
    settings.ECHOMQ_CONNECTIONS = [{"name": "eu", "url": "redis://a", "queues": ["emails"]}]
    assert check_connections() == []


def test_a_name_the_check_calls_twice_is_not_served_even_after_a_wrong_entry(
    settings: Any,
) -> None:
    """Every entry the start-up check names is left out, so what the check says
    and what the pages serve agree: the second "eu" is the one named twice."""
    settings.ECHOMQ_CONNECTIONS = [
        {"name": "eu", "url": "http://eu-redis:6379"},
        {"name": "eu", "url": "redis://eu-redis:6379/0"},
    ]
    assert [p.msg for p in check_connections()][1] == (
        "ECHOMQ_CONNECTIONS connection 'eu' is named twice"
    )
    assert connections.named("eu") is None
    assert [c.name for c in connections.configured()] == ["default"]


def test_a_flow_on_the_second_server_links_and_follows_its_jobs_there(
    viewer: Client, staging_redis: Redis
) -> None:
    pick = FlowJob("pick", "parts")
    root = FlowProducer(staging_redis).add(
        FlowJob("ship", "orders", children=[FlowJob("pack", "items", children=[pick])])
    )
    pack = root.children[0]
    html = viewer.get(f"/c/staging/queues/bull/parts/job/{pack.children[0].id}").content.decode()
    assert f'href="/c/staging/queues/bull/items/job/{pack.id}" data-flow-parent' in html
    assert f'href="/c/staging/queues/bull/orders/job/{root.id}" data-flow-root' in html
    watch = re.search(r'id="flow-watch" type="application/json">(.*?)</script>', html)
    assert watch is not None
    assert set(json.loads(watch.group(1))) == {
        "staging bull:orders",
        "staging bull:items",
        "staging bull:parts",
    }
    api = viewer.get(f"/api/c/staging/queues/bull/orders/flow/{root.id}").json()
    assert [child["id"] for child in api["flow"]["root"]["children"]] == [pack.id]


def test_more_children_of_a_flow_on_the_second_server_load_from_there(
    viewer: Client, staging_redis: Redis
) -> None:
    orders = QueueRef("bull", "orders").keys
    seed_job(staging_redis, orders, "big", state="waiting-children")
    for n in range(60):
        seed_job(staging_redis, orders, f"c{n}", fields={"parentKey": orders.job("big")})
        staging_redis.hset(orders.processed("big"), orders.job(f"c{n}"), "1")
    html = viewer.get("/c/staging/queues/bull/orders/job/big").content.decode()
    more = re.search(r'hx-get="([^"]+)"', html)
    assert more is not None
    assert more.group(1).startswith("/c/staging/queues/bull/orders/flow-children/big")
    fragment = viewer.get(more.group(1).replace("&amp;", "&"))
    assert fragment.status_code == 200
    assert "/c/staging/queues/bull/orders/job/c" in fragment.content.decode()


@pytest.mark.parametrize("tab", ["", "events/", "workers/", "schedulers/"])
def test_every_tab_of_a_queue_on_the_second_server_links_within_it(
    viewer: Client, two_servers: tuple[Redis, Redis], tab: str
) -> None:
    page = viewer.get(STAGING_PAGE + tab)
    assert page.status_code == 200
    html = page.content.decode()
    links = set(
        re.findall(
            r'(?:href|action|hx-get|data-[a-z-]*url)="(/[^"?]*queues/bull/emails/[^"?]*)', html
        )
    )
    assert links, "the tab links to its queue's other pages"
    elsewhere = {link for link in links if not link.startswith(("/c/staging/", "/api/c/staging/"))}
    assert elsewhere == set()
