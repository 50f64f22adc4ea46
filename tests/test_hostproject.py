"""The app mounted in another Django project, installed from its wheel.

tests/hostproject has its own user model (signed in by e-mail, permissions but
no staff flag), its own sign-in page, its own "api" namespace, base.html and
404.html, database sessions and Django's own ASGI handler; it includes the
app's URLs at /ops/queues/ and adds the app's socket route to its router
(tests/hosting.py serves it with daphne from a fresh virtual environment).
Everything here goes through that server over HTTP and WebSockets, on a
queue whose name holds "/" and "~".
"""

from __future__ import annotations

import json
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from redis import Redis
from websockets.exceptions import ConnectionClosed, InvalidStatus
from websockets.sync.client import ClientConnection, connect
from websockets.typing import Origin

from queues.queue import Queue
from tests.e2e.server import DashboardServer
from tests.hosting import HOST_PROJECT, MOUNT, SIGN_IN, Browserless, host_env, page_links

pytestmark = [pytest.mark.host, pytest.mark.timeout(1500)]

# A "/" and a "~s" (which, unescaped, the server would read as another "/").
QUEUE = "ops/nightly~s"
SEGMENT = "ops~snightly~~s"
PAGE = f"{MOUNT}queues/bull/{SEGMENT}/"
API = f"{MOUNT}api/queues/bull/{SEGMENT}/"
SOCKET = f"{MOUNT}ws/live/"


@pytest.fixture
def failed_job(redis_client: Redis, host_site: DashboardServer) -> tuple[Queue, str]:
    """The queue with one failed job in it (the Redis is flushed around each test)."""
    queue = Queue(QUEUE, redis_client)
    job_id = queue.add("nightly-report", {"day": "monday"})
    queue.fail(job_id, "the report server was down")
    return queue, job_id


def signed_in(server: DashboardServer, email: str) -> Browserless:
    client = Browserless(server.url)
    client.sign_in(email)
    return client


def test_the_host_runs_the_installed_wheel_not_the_checkout(host_python: Path) -> None:
    done = subprocess.run(
        [host_python, "-c", "import dashboard, queues; print(dashboard.__file__, queues.__file__)"],
        cwd=HOST_PROJECT,
        env=host_env(),
        capture_output=True,
        text=True,
        check=True,
    )
    venv = str(host_python.parent.parent)
    assert all(path.startswith(venv) for path in done.stdout.split()), done.stdout


def test_pages_sit_under_the_prefix_behind_the_hosts_own_sign_in(
    host_site: DashboardServer, failed_job: tuple[Queue, str]
) -> None:
    anonymous = Browserless(host_site.url)
    answer = anonymous.get(PAGE)
    assert answer.status == 302
    assert answer.headers["Location"] == f"{SIGN_IN}?next={PAGE}"

    actor = signed_in(host_site, "actor@example.com")
    _, job_id = failed_job
    page = actor.get(PAGE + "?state=failed")
    assert page.status == 200
    assert f'data-job-id="{job_id}"' in page.body
    # The app's own layout, not the host's base.html, with every URL under the prefix.
    assert "Host project chrome" not in page.body
    assert f'data-live-url="{SOCKET}"' in page.body
    assert f'data-login-url="{SIGN_IN}"' in page.body
    assert 'action="/people/sign-out/"' in page.body  # ECHOMQ_LOGOUT_URL, the host's
    links = [link for link in page_links(page.body) if link.startswith("/")]
    strays = [
        link for link in links if not link.startswith((MOUNT, "/static/", "/people/sign-out/"))
    ]
    assert strays == []
    # Its static files, found in the installed app by collectstatic, served by the host.
    for asset in [link for link in links if link.startswith("/static/")]:
        assert actor.get(asset).status == 200, asset

    job_page = actor.get(f"{PAGE}job/{job_id}")
    assert job_page.status == 200
    assert "the report server was down" in job_page.body
    events = actor.get(f"{PAGE}events/")
    assert events.status == 200
    assert f'data-counts-url="{API}"' in events.body


def test_the_overview_lists_the_queue_with_its_link_under_the_prefix(
    host_site: DashboardServer, failed_job: tuple[Queue, str]
) -> None:
    actor = signed_in(host_site, "actor@example.com")
    # The queue was just created: discovery finds it within its next pass.
    deadline = time.monotonic() + 30
    while True:
        overview = actor.get(MOUNT)
        assert overview.status == 200
        if f'href="{PAGE}"' in overview.body or time.monotonic() > deadline:
            break
        time.sleep(0.5)
    assert f'href="{PAGE}"' in overview.body


def test_the_hosts_own_pages_api_and_error_pages_stay_its_own(
    host_site: DashboardServer,
) -> None:
    actor = signed_in(host_site, "actor@example.com")
    home = actor.get("/")
    assert "Host project chrome" in home.body
    assert f'href="{MOUNT}"' in home.body  # the host reverses dashboard:overview
    assert actor.get("/api/ping/").json() == {"host": "pong"}  # its own "api" namespace
    missing = actor.get("/no-such-page/")
    assert missing.status == 404
    assert "Host project: page not found" in missing.body
    # Under the app's API, an unknown path is the API's JSON error.
    unknown = actor.get(MOUNT + "api/no-such-endpoint/")
    assert unknown.status == 404
    assert unknown.json()["error"]["code"] == "not_found"
    # The host's own error answers are not turned into the app's JSON.
    assert actor.request("POST", "/api/ping/").headers["Content-Type"].startswith("text/html")


def test_the_api_reads_the_queue(host_site: DashboardServer, failed_job: tuple[Queue, str]) -> None:
    _, job_id = failed_job
    anonymous = Browserless(host_site.url).get(API)
    assert anonymous.status == 401
    assert anonymous.json()["error"]["code"] == "unauthenticated"

    viewer = signed_in(host_site, "viewer@example.com")
    queues = viewer.get(MOUNT + "api/queues/").json()["queues"]
    assert f"bull:{QUEUE}" in [q["queue"] for q in queues]
    summary = viewer.get(API).json()
    assert (summary["name"], summary["counts"]["failed"]) == (QUEUE, 1)
    jobs = viewer.get(API + "jobs/?state=failed").json()
    assert [row["id"] for row in jobs["jobs"]] == [job_id]
    assert viewer.get(f"{API}job/{job_id}").json()["name"] == "nightly-report"


def test_actions_from_the_page_and_the_api_move_jobs(
    host_site: DashboardServer, failed_job: tuple[Queue, str]
) -> None:
    queue, job_id = failed_job
    actor = signed_in(host_site, "actor@example.com")

    answer = actor.post_json(API + "actions/", {"action": "retry", "ids": [job_id]})
    assert answer.status == 200, answer.body
    assert queue.get_state(job_id) == "wait"

    queue.fail(job_id, "down again")
    form = {"action": "retry", "ids": [job_id], "state": "failed", "next": PAGE + "?state=failed"}
    answer = actor.post_form(PAGE + "actions/", form)
    assert answer.status == 302
    assert answer.headers["Location"] == PAGE + "?state=failed"
    assert queue.get_state(job_id) == "wait"
    # The message the action left (the host's messages middleware) shows on the next page.
    assert f"Job {job_id} retried" in actor.get(PAGE + "?state=failed").body


def test_permissions_hold_for_the_hosts_users(
    host_site: DashboardServer, failed_job: tuple[Queue, str]
) -> None:
    queue, job_id = failed_job
    retry = {"action": "retry", "ids": [job_id]}

    viewer = signed_in(host_site, "viewer@example.com")
    assert viewer.get(PAGE).status == 200
    refused = viewer.post_json(API + "actions/", retry)
    assert (refused.status, refused.json()["error"]["code"]) == (403, "forbidden")
    page_refused = viewer.post_form(PAGE + "actions/", {**retry, "state": "failed"})
    assert page_refused.status == 403
    assert 'name="action"' not in viewer.get(PAGE + "?state=failed").body

    nobody = signed_in(host_site, "nobody@example.com")
    assert nobody.get(PAGE).status == 403
    assert nobody.get(MOUNT).status == 403
    assert nobody.get(API).json()["error"]["code"] == "forbidden"
    assert nobody.post_json(API + "actions/", retry).status == 403

    assert queue.get_state(job_id) == "failed"


def open_socket(server: DashboardServer, client: Browserless | None, path: str = SOCKET) -> Any:
    headers = {"Cookie": client.cookie_header()} if client else {}
    return connect(
        f"ws://127.0.0.1:{server.port}{path}",
        origin=Origin(server.url),
        additional_headers=headers,
        open_timeout=10,
    )


def messages_until(socket: ClientConnection, wanted: str, timeout: float = 15) -> Iterator[Any]:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        message = json.loads(socket.recv(timeout=deadline - time.monotonic()))
        yield message
        if message["type"] == wanted:
            return
    raise AssertionError(f"no {wanted!r} message within {timeout}s")


def close_code(socket: ClientConnection) -> int | None:
    with pytest.raises(ConnectionClosed) as closed:
        socket.recv(timeout=10)
    return closed.value.rcvd.code if closed.value.rcvd else None


def test_the_live_socket_follows_the_prefix_and_streams_the_queues_events(
    host_site: DashboardServer, failed_job: tuple[Queue, str]
) -> None:
    queue, _ = failed_job
    viewer = signed_in(host_site, "viewer@example.com")
    with open_socket(host_site, viewer) as socket:
        socket.send(json.dumps({"type": "subscribe", "queues": [{"queue": f"bull:{QUEUE}"}]}))
        list(messages_until(socket, "subscribed"))
        added = queue.add("live-one", {})
        seen: list[tuple[str, str]] = []
        for message in messages_until(socket, "events"):
            seen += [(e["event"], e["job_id"]) for e in message.get("events", [])]
        assert ("added", added) in seen or ("waiting", added) in seen


def test_the_live_socket_refuses_who_may_not_watch(host_site: DashboardServer) -> None:
    with open_socket(host_site, None) as socket:
        assert close_code(socket) == 4401
    with open_socket(host_site, signed_in(host_site, "nobody@example.com")) as socket:
        assert close_code(socket) == 4403
    viewer = signed_in(host_site, "viewer@example.com")
    with pytest.raises(InvalidStatus):  # the host's AllowedHostsOriginValidator, and ours
        connect(
            f"ws://127.0.0.1:{host_site.port}{SOCKET}",
            origin=Origin("http://evil.example"),
            additional_headers={"Cookie": viewer.cookie_header()},
            open_timeout=10,
        )
    # Only under the prefix: the stand-alone site's path is not the host's.
    with (
        pytest.raises((InvalidStatus, ConnectionClosed)),
        open_socket(host_site, viewer, "/ws/live/") as socket,
    ):
        socket.recv(timeout=10)
