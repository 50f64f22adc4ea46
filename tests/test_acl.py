"""Each Redis user of a deployment runs with exactly the ACL docs/deploy.md gives it.

The ACLs are read out of the document ("ACL users"), so the
document and the test cannot drift, and set on a redis-server of the
test's own. Each role runs what it does (tests.redis_roles.py) as its user:
the worker processes jobs, the acting dashboard reads every page and acts,
the read-only dashboard reads every page and says why its buttons are off.
Nothing may be refused (the ACL log stays empty), and every command a role
ran (INFO commandstats, scripts' commands included) is one its ACL grants.
A command Redis refuses anyway (a read-only user behind a dashboard that
was not told it is read-only) is said in words, never a 500.
"""

from __future__ import annotations

import asyncio
import json
import logging
import re
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.test import Client
from redis import Redis

from queues import discovery, scripts
from queues.job import Job
from queues.queue import Queue
from queues.redis_server import LocalRedisServer, server_binary
from tests.acl import ACL_PASSWORDS, acl_rules, documented_acl
from tests.e2e.server import ROOT, free_port
from tests.redis_roles import (
    API,
    METRICS_TOKEN,
    PAGE,
    QUEUE,
    act_on_everything,
    look_at_everything,
    worker_flow,
)
from tests.worker_helpers import running, until


def user_url(server: LocalRedisServer, name: str) -> str:
    return f"redis://{name}:{ACL_PASSWORDS[name]}@127.0.0.1:{server.port}/0"


@pytest.fixture(scope="module")
def acl_server() -> Iterator[LocalRedisServer]:
    server = LocalRedisServer(server_binary()[0], port=free_port()).start()
    admin = Redis(port=server.port)
    for name, rules in documented_acl().items():
        admin.execute_command("ACL", "SETUSER", name, "reset", *acl_rules(rules))
    admin.close()
    yield server
    server.stop()


def commands_run(admin: Redis) -> set[str]:
    """The commands run since the last CONFIG RESETSTAT (scripts' included),
    as ACL rules name them (``evalsha``, ``client|setname``), less the
    admin's own reset and this INFO."""
    own = {"config|resetstat": 1, "info": 1}
    stats = admin.info("commandstats")
    return {
        name.removeprefix("cmdstat_")
        for name, figures in stats.items()
        if figures["calls"] > own.get(name.removeprefix("cmdstat_"), 0)
    }


def acl_log(admin: Redis, user: str) -> list[str]:
    """What the ACL refused ``user`` (the newest first), in a line each."""
    entries = admin.execute_command("ACL", "LOG", 100)
    refused = []
    for raw in entries:
        entry = dict(zip(raw[::2], raw[1::2], strict=True))
        if entry[b"username"].decode() == user:
            command = re.search(r"\bcmd=(\S+)", entry[b"client-info"].decode())
            refused.append(
                f"{entry[b'reason'].decode()} {entry[b'object'].decode()}"
                f" ({entry[b'context'].decode()}, {command.group(1) if command else '?'})"
            )
    return refused


@pytest.fixture(scope="module")
def admin(acl_server: LocalRedisServer) -> Iterator[Redis]:
    client = Redis(port=acl_server.port)
    yield client
    client.close()


@pytest.fixture(scope="module")
def ids(acl_server: LocalRedisServer, admin: Redis) -> dict[str, str]:
    """The worker's run, as the worker user: the queue every dashboard then shows."""
    admin.execute_command("ACL", "LOG", "RESET")
    admin.config_resetstat()
    found = asyncio.run(worker_flow(user_url(acl_server, "echomq-worker")))
    report("echomq-worker", admin)
    return found


def granted(user: str, *, selectors: bool = True) -> set[str]:
    """The commands the documented ACL grants ``user`` (its selectors' too)."""
    rules = acl_rules(documented_acl()[user])
    if not selectors:
        rules = [rule for rule in rules if not rule.startswith("(")]
    words = " ".join(rules).replace("(", " ").replace(")", " ").split()
    return {word[1:] for word in words if word.startswith("+")}


def report(user: str, admin: Redis) -> None:
    """Print what the user's ACL grants that the role's run did not use (paths
    the flows do not take: the scripts' other branches, an outage's PING)."""
    print(f"\n{user}: granted, not run here: {sorted(granted(user) - commands_run(admin))}")


def script_commands(admin: Redis, names: set[str]) -> set[str]:
    """Every Redis command the scripts ``names`` call, as Redis 7 runs them
    (includes inlined): the quoted upper-case words of their source (how the
    scripts name commands, in redis.call and in the helpers that call it)
    that the server knows as commands."""
    known = {name.decode() for name in admin.command_list()}
    library = scripts.library()
    words = {word.lower() for name in names for word in QUOTED.findall(library[name].source)}
    return words & known


QUOTED = re.compile(r"[\"']([A-Z]+)[\"']")


def runtime_scripts() -> set[str]:
    """The scripts the runtime runs: those named by queues/ outside its read
    model and the history collector (the dashboard's)."""
    runtime = [
        path
        for path in (ROOT / "queues").rglob("*.py")
        if "read" not in path.parts and path.name != "collector.py"
    ]
    texts = [path.read_text() for path in runtime]
    return {name for name in scripts.library() if any(f'"{name}"' in t for t in texts)}


def test_the_worker_and_the_acting_dashboard_may_run_every_command_of_their_scripts(
    admin: Redis,
) -> None:
    """The flows cannot take every branch of every script; this reads them all."""
    runtime = runtime_scripts()
    assert {"moveToActive", "moveToFinished", "addJob", "addFlow"} <= runtime
    assert "recordHistory" not in runtime
    worker = script_commands(admin, runtime)
    assert {"xadd", "zadd", "hincrby", "rpoplpush"} <= worker  # some it must find
    assert worker - granted("echomq-worker") == set()
    assert script_commands(admin, set(scripts.library())) - granted("echomq-dashboard") == set()


def test_the_read_only_dashboard_may_write_only_its_own_keys(admin: Redis) -> None:
    """Outside its selector (its error groups index, the history) the viewer's
    user has no command Redis flags as a write: it cannot change a job."""
    infos = admin.command()  # by name; a subcommand is its command's
    root = sorted(granted("echomq-viewer", selectors=False))
    assert {name.split("|")[0] for name in root} - set(infos) == set()
    assert [name for name in root if "write" in infos[name.split("|")[0]]["flags"]] == []
    (selector,) = [rule for rule in acl_rules(documented_acl()["echomq-viewer"]) if "(" in rule]
    assert selector.startswith("(~bull:*:dashboard-error-groups:* ~echomq:* ")


@pytest.fixture
def dashboard_as(settings: Any, acl_server: LocalRedisServer) -> Callable[[str], None]:
    """Point the dashboard at the Redis user ``name`` (a new URL: new clients)."""

    def use(name: str) -> None:
        settings.REDIS_URL = user_url(acl_server, name)
        settings.ECHOMQ_METRICS_TOKEN = METRICS_TOKEN
        discovery.clear_discovery_cache()

    return use


def person(username: str) -> Client:
    """A superuser: every button the dashboard may show, it shows."""
    client = Client()
    client.force_login(User.objects.create_superuser(username, password=None))
    return client


@pytest.mark.django_db(transaction=True)  # all alike: pytest-django keeps the file's order
def test_a_worker_with_its_acl_processes_jobs(ids: dict[str, str], admin: Redis) -> None:
    assert acl_log(admin, "echomq-worker") == []
    assert Queue(QUEUE, admin).get_state(ids["parent"]) == "completed"


@pytest.mark.django_db(transaction=True)
def test_a_read_only_dashboard_shows_every_page_and_says_why_its_buttons_are_off(
    ids: dict[str, str], admin: Redis, settings: Any, dashboard_as: Callable[[str], None]
) -> None:
    dashboard_as("echomq-viewer")
    settings.ECHOMQ_READ_ONLY = True
    admin.execute_command("ACL", "LOG", "RESET")
    admin.config_resetstat()
    boss = look_at_everything(ids, admin)
    report("echomq-viewer", admin)
    assert acl_log(admin, "echomq-viewer") == []
    note = "The dashboard is read-only (ECHOMQ_READ_ONLY): actions are turned off."
    for path in (PAGE + "?state=failed", PAGE + f"job/{ids['failed']}"):
        html = boss.get(path).content.decode()
        assert f'<p class="muted read-only-note" data-read-only>{note}</p>' in html, path
        assert 'value="retry"' not in html, path
        assert 'value="pause"' not in html, path
    refused = boss.post(PAGE + "actions/", {"action": "retry", "ids": ids["failed"]})
    assert refused.status_code == 403
    assert Queue(QUEUE, admin).get_state(ids["failed"]) == "failed"


@pytest.mark.django_db(transaction=True)
def test_a_command_the_acl_refuses_is_said_in_words_on_the_page_and_in_the_api(
    ids: dict[str, str], admin: Redis, dashboard_as: Callable[[str], None]
) -> None:
    """The read-only user behind a dashboard not told it is read-only: the buttons
    show, and Redis refuses what they do. Nothing moves, and no answer is a 500."""
    dashboard_as("echomq-viewer")
    boss = person("boss")
    page = boss.post(PAGE + "actions/", {"action": "retry", "ids": ids["failed"]})
    assert page.status_code == 403
    html = page.content.decode()
    assert "<h1>Redis refused</h1>" in html
    assert "the dashboard&#x27;s Redis user is not allowed it" in html
    assert "The action may have stopped part-way" in html
    api = boss.post(
        API + "actions/",
        json.dumps({"action": "retry", "ids": [ids["failed"]]}),
        content_type="application/json",
    )
    assert api.status_code == 403
    error = api.json()["error"]
    assert error["code"] == "redis_no_permission"
    assert "is not allowed it" in error["message"]
    assert Queue(QUEUE, admin).get_state(ids["failed"]) == "failed"
    assert acl_log(admin, "echomq-viewer"), "Redis refused nothing"


@pytest.mark.django_db(transaction=True)
def test_an_acting_dashboard_with_its_acl_shows_every_page_and_acts(
    ids: dict[str, str], admin: Redis, dashboard_as: Callable[[str], None]
) -> None:
    dashboard_as("echomq-dashboard")
    admin.execute_command("ACL", "LOG", "RESET")
    admin.config_resetstat()
    boss = look_at_everything(ids, admin)
    act_on_everything(boss, ids, admin)
    report("echomq-dashboard", admin)
    assert acl_log(admin, "echomq-dashboard") == []


async def test_a_command_refused_inside_a_script_is_said_as_refused_not_as_a_wrong_type(
    acl_server: LocalRedisServer, admin: Redis, caplog: pytest.LogCaptureFixture
) -> None:
    """A user one command short (the worker's ACL without SISMEMBER, which
    moveToFinished probes the stalled set with): the finish is refused, and
    the refusal says so. The scripts read any failed probe as a key of
    another type ("key bull:refusals:stalled holds a set, expected a set")."""
    rules = documented_acl()["echomq-worker"].replace(" +sismember", "")
    admin.execute_command("ACL", "SETUSER", "short-one", "reset", *acl_rules(rules))
    url = f"redis://short-one:{ACL_PASSWORDS['echomq-worker']}@127.0.0.1:{acl_server.port}/0"
    Queue("refusals", admin).add("charge-card", {"order": "ord_5be1c09a2f"})
    taken = asyncio.Event()

    async def process(job: Job) -> Any:
        taken.set()

    with caplog.at_level(logging.ERROR, logger="echomq.worker"):
        async with running("refusals", process, url=url):
            await asyncio.wait_for(taken.wait(), 10)
            await until(lambda: "moveToFinished" in caplog.text, 10)
    said = caplog.text
    assert "The user executing the script can't run this command" in said, said
    assert "WRONGTYPE" not in said
    assert Queue("refusals", admin).get_state("1") == "active"  # nothing was changed
