"""The dashboard as a real server process, for the browser tests and bench/live.py.

``prepare(redis_url, workdir)`` builds the environment of a dashboard process:
a fresh SQLite database (migrated) with one staff user allowed to view and
act. ``DashboardServer`` runs ``daphne dashboard.asgi:application`` with it on
a port and can be stopped and started again on the same port.
"""

from __future__ import annotations

import http.cookiejar
import os
import re
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
# The system Chromium and how the tests and the bench launch it.
CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]
USERNAME = "oncall"
PASSWORD = "e2e-password-1"
CREATE_USER = """
from django.contrib.auth.models import Permission, User
user = User.objects.create_user({username!r}, password={password!r}, is_staff=True)
codenames = ["view_queues", "act_on_queues", "change_jobs"]
user.user_permissions.add(*Permission.objects.filter(codename__in=codenames))
"""


class ServerFailed(RuntimeError):
    pass


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def terminate(process: subprocess.Popen[bytes], grace: float = 10.0) -> None:
    """SIGTERM, then SIGKILL after ``grace`` seconds; returns once the process is gone."""
    terminate_all([process], grace)


def terminate_all(processes: Iterable[subprocess.Popen[bytes]], grace: float = 10.0) -> None:
    """SIGTERM to all of them at once, then SIGKILL to those still running
    ``grace`` seconds later; returns once all are gone. At once, because a
    BullMQ worker takes up to its drain delay (5 s) to close and one that
    holds a long job waits for it: one after the other, a test's workers
    cost their sum."""
    running = [process for process in processes if process.poll() is None]
    for process in running:
        process.terminate()
    deadline = time.monotonic() + grace
    for process in running:
        try:
            process.wait(max(0.0, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


def manage(env: dict[str, str], *args: str) -> None:
    subprocess.run(
        [sys.executable, "manage.py", *args], cwd=ROOT, env=env, check=True, capture_output=True
    )


def process_env(redis_url: str, workdir: Path, **settings: str) -> dict[str, str]:
    """The environment of a dashboard process on ``redis_url``, its database in ``workdir``."""
    return {
        **os.environ,
        "PYTHONPATH": str(ROOT),
        "DJANGO_SETTINGS_MODULE": "dashboard.settings",
        "REDIS_URL": redis_url,
        "ECHOMQ_DB": str(workdir / "db.sqlite3"),
        "SECRET_KEY": "e2e-secret-key-not-for-production",
        "DEBUG": "0",
        "ALLOWED_HOSTS": "127.0.0.1,localhost",
        "PYTHONUNBUFFERED": "1",
        **settings,
    }


def prepare(redis_url: str, workdir: Path, **settings: str) -> dict[str, str]:
    """The environment of a dashboard process on ``redis_url``, its database ready."""
    env = process_env(redis_url, workdir, **settings)
    manage(env, "migrate", "--noinput")
    manage(env, "shell", "-c", CREATE_USER.format(username=USERNAME, password=PASSWORD))
    return env


@dataclass
class DashboardServer:
    """daphne (or runserver) serving dashboard.asgi in a child process; stop/start keep the port."""

    env: dict[str, str]
    port: int
    log_path: Path
    # "daphne", or "runserver": Django's development server (Channels' daphne
    # replaces it, so it serves the same ASGI application, sockets included).
    command: str = "daphne"
    # Another project's server (tests/hostproject): its Python, folder, ASGI app
    # and a page that answers 200 once it is up.
    python: str = sys.executable
    cwd: Path = ROOT
    application: str = "dashboard.asgi:application"
    ready_path: str = "/login/"
    # The command line after the interpreter (None: daphne as above, or
    # runserver), and what the readiness check sends (a proxy's headers, for
    # the production profile, which redirects plain http).
    argv: list[str] | None = None
    ready_headers: dict[str, str] = field(default_factory=dict)
    process: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self, timeout: float = 30.0) -> None:
        if self.argv is not None:
            args = list(self.argv)
        elif self.command == "runserver":
            args = ["manage.py", "runserver", "--noreload", f"127.0.0.1:{self.port}"]
        else:
            args = ["-m", "daphne", "-b", "127.0.0.1", "-p", str(self.port)]
            args.append(self.application)
        with self.log_path.open("ab") as log:
            self.process = subprocess.Popen(
                [self.python, *args],
                cwd=self.cwd,
                env=self.env,
                stdout=log,
                stderr=subprocess.STDOUT,
            )
        ready = urllib.request.Request(  # noqa: S310 (our own http:// URL)
            self.url + self.ready_path, headers=self.ready_headers
        )
        wait_until_serving(self.command, self.process, ready, self.log_path, timeout)

    def log(self) -> str:
        return log_tail(self.log_path)

    def stop(self) -> None:
        if self.process is not None:
            terminate(self.process)
        self.process = None


def log_tail(log_path: Path) -> str:
    return log_path.read_text(errors="replace")[-3000:]


def wait_until_serving(
    name: str,
    process: subprocess.Popen[bytes],
    url: str | urllib.request.Request,
    log_path: Path,
    timeout: float = 30.0,
) -> None:
    """Returns once ``url`` (or the request, with the headers a proxy would
    add) answers 200; ServerFailed (with the end of the process's log) if the
    process, called ``name`` there, exits first or the time runs out."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise ServerFailed(f"{name} exited with {process.returncode}:\n{log_tail(log_path)}")
        try:
            # Our own http:// URL, never user input.
            with urllib.request.urlopen(url, timeout=2) as response:  # noqa: S310
                if response.status == 200:
                    return
        except (urllib.error.URLError, ConnectionError, TimeoutError):
            time.sleep(0.1)
    raise ServerFailed(f"{name} did not answer within {timeout}s:\n{log_tail(log_path)}")


def submit_login(
    opener: urllib.request.OpenerDirector, base_url: str, password: str = PASSWORD
) -> int:
    """The login form, filled in as the test user and sent; the answer's status."""
    # Our own http:// server URL, never user input.
    form = opener.open(base_url + "/login/", timeout=30).read().decode()
    token = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', form)
    assert token is not None
    body = urllib.parse.urlencode(
        {"username": USERNAME, "password": password, "csrfmiddlewaretoken": token.group(1)}
    ).encode()
    login = urllib.request.Request(  # noqa: S310 (see above)
        base_url + "/login/", body, {"Referer": base_url + "/login/"}
    )
    try:
        with opener.open(login, timeout=30) as response:
            status: int = response.status
            return status
    except urllib.error.HTTPError as error:
        return error.code


def login_cookie(base_url: str) -> str:
    """Log in through the form over plain HTTP; the Cookie header a socket sends."""
    jar = http.cookiejar.CookieJar()
    opener = urllib.request.build_opener(urllib.request.HTTPCookieProcessor(jar))
    submit_login(opener, base_url)
    return "; ".join(f"{c.name}={c.value}" for c in jar)
