"""A viewer's page latency while anonymous logins flood the server.

    python bench/login_flood.py [--attackers 16] [--requests 200]

Starts a private redis-server and the dashboard under daphne (the real ASGI
app, as the browser tests do), logs a viewer in, then times the viewer's
``GET /api/queues/`` (one keep-alive connection, one request at a time, at
most a minute per phase): first alone, then while ``--attackers`` threads post logins as fast as the
server answers them, each with a new username and a wrong password, so every
one costs a password hash (a username seen before would soon be locked out
and refused cheaply). Prints p50 / p95 / max in ms for both phases and how
many login attempts the server answered per second during the flood.
"""

from __future__ import annotations

import argparse
import http.client
import itertools
import re
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path
from urllib.parse import urlencode

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from queues.redis_server import LocalRedisServer, server_binary  # noqa: E402
from tests.e2e.server import PASSWORD, USERNAME, DashboardServer, free_port, prepare  # noqa: E402

_COOKIE = re.compile(r"^([^=;]+)=([^;]*)")


class Session:
    """One keep-alive connection with its cookies."""

    def __init__(self, port: int) -> None:
        self.connection = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
        self.cookies: dict[str, str] = {}

    @classmethod
    def logged_in_as(cls, other: Session) -> Session:
        """Another connection in ``other``'s session (its cookies)."""
        session = cls(other.connection.port)
        session.cookies = dict(other.cookies)
        return session

    def fetch(
        self, method: str, path: str, form: dict[str, str] | None = None
    ) -> tuple[int, bytes]:
        """The answer's status and body."""
        headers = {"Cookie": "; ".join(f"{k}={v}" for k, v in self.cookies.items())}
        body = None
        if form is not None:
            body = urlencode(form)
            headers["Content-Type"] = "application/x-www-form-urlencoded"
        self.connection.request(method, path, body=body, headers=headers)
        response = self.connection.getresponse()
        content = response.read()
        for value in response.headers.get_all("Set-Cookie") or []:
            found = _COOKIE.match(value)
            if found:
                self.cookies[found.group(1)] = found.group(2)
        return response.status, content

    def request(self, method: str, path: str, form: dict[str, str] | None = None) -> int:
        return self.fetch(method, path, form)[0]

    def login(self, username: str, password: str) -> int:
        if "csrftoken" not in self.cookies:
            self.request("GET", "/login/")
        form = {
            "username": username,
            "password": password,
            "csrfmiddlewaretoken": self.cookies["csrftoken"],
        }
        return self.request("POST", "/login/", form)


def timings(
    session: Session, count: int, most_s: float = 60.0, path: str = "/api/queues/"
) -> list[float]:
    """``count`` GETs of ``path``, or as many as fit in ``most_s`` seconds: each one's ms."""
    taken: list[float] = []
    deadline = time.monotonic() + most_s
    while len(taken) < count and time.monotonic() < deadline:
        started = time.perf_counter()
        status = session.request("GET", path)
        taken.append((time.perf_counter() - started) * 1000)
        assert status == 200, status
    return taken


def summary(taken: list[float]) -> str:
    ordered = sorted(taken)
    p95 = ordered[int(len(ordered) * 0.95) - 1]
    return (
        f"p50 {statistics.median(ordered):7.1f}  p95 {p95:7.1f}  max {ordered[-1]:7.1f} ms"
        f"  ({len(ordered)} requests)"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--attackers", type=int, default=16)
    parser.add_argument("--requests", type=int, default=200)
    args = parser.parse_args()
    binary, _ = server_binary()
    redis = LocalRedisServer(binary).start()
    workdir = Path(tempfile.mkdtemp(prefix="login-flood-"))
    server = DashboardServer(prepare(redis.url, workdir), free_port(), workdir / "daphne.log")
    server.start()
    try:
        viewer = Session(server.port)
        assert viewer.login(USERNAME, PASSWORD) == 302
        timings(viewer, 20)  # warm up
        alone = timings(viewer, args.requests)
        print(f"viewer alone:                    {summary(alone)}", flush=True)

        stop = threading.Event()
        answered = itertools.count()
        names = itertools.count()

        def attack() -> None:
            session = Session(server.port)
            while not stop.is_set():
                session.login(f"mallory-{next(names)}", "wrong-password")
                next(answered)

        attackers = [threading.Thread(target=attack) for _ in range(args.attackers)]
        for thread in attackers:
            thread.start()
        time.sleep(2)  # let the flood build up
        start_count, started = next(answered), time.monotonic()
        flooded = timings(viewer, args.requests)
        rate = (next(answered) - start_count) / (time.monotonic() - started)
        stop.set()
        for thread in attackers:
            thread.join()
        print(f"viewer, {args.attackers} logins at once: {summary(flooded)}", flush=True)
        print(f"login attempts answered during the flood: {rate:.1f}/s", flush=True)
    finally:
        server.stop()
        redis.stop()


if __name__ == "__main__":
    main()
