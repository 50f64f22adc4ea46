"""The app as another Django project gets it: the built wheel, installed with pip
into a fresh virtual environment, mounted by tests/hostproject at /ops/queues/.

Session fixtures (tests/conftest.py imports them); the wheel and the
environment are built once per test run, even when pytest-xdist runs it in
several processes (each then serves its own host site):

``built_wheel``  ``pip wheel`` of a copy of the checkout's tracked files, so
                 nothing untracked, and no stale ``build/`` folder, gets in.
``host_python``  a new virtual environment (from the Python running the tests)
                 with the wheel installed; pip fetches its dependencies from
                 this machine's package indexes. The checkout is not on its path.
``host_site``    tests/hostproject served by daphne from that environment, its
                 database migrated, static files collected, three users made.
"""

from __future__ import annotations

import fcntl
import http.cookiejar
import json
import os
import re
import shutil
import subprocess
import sys
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.server import ROOT, DashboardServer, free_port

HOST_PROJECT = ROOT / "tests" / "hostproject"
MOUNT = "/ops/queues/"
SIGN_IN = "/people/sign-in/"
PASSWORD = "host-password-1"
# e-mail -> the dashboard permissions that user holds (the host's users have no staff flag).
USERS = {
    "actor@example.com": ["view_queues", "act_on_queues"],
    "viewer@example.com": ["view_queues"],
    "nobody@example.com": [],
}
MAKE_USERS = """
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Permission
for email, codenames in {users!r}.items():
    person = get_user_model().objects.create_user(email, password={password!r})
    person.user_permissions.add(*Permission.objects.filter(
        content_type__app_label="dashboard", codename__in=codenames))
"""


def tracked_copy(target: Path) -> Path:
    """The checkout's tracked files as they are on disk now, copied into ``target``."""
    listed = subprocess.run(
        ["git", "ls-files", "-z"], cwd=ROOT, check=True, capture_output=True
    ).stdout.split(b"\0")
    for name in filter(None, (raw.decode() for raw in listed)):
        if (ROOT / name).is_file():
            (target / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(ROOT / name, target / name)
    return target


def run(*args: str | Path, **options: Any) -> subprocess.CompletedProcess[str]:
    """A command that must succeed; its output is in the failure when it does not."""
    done = subprocess.run(
        [str(arg) for arg in args], capture_output=True, text=True, check=False, **options
    )
    if done.returncode != 0:
        pytest.fail(
            f"{' '.join(map(str, args))} failed:\n{done.stdout[-3000:]}{done.stderr[-3000:]}"
        )
    return done


def run_folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The temporary folder of the whole test run: under pytest-xdist each
    worker's own folder is inside it."""
    base = tmp_path_factory.getbasetemp()
    return base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base


@contextmanager
def built_once(tmp_path_factory: pytest.TempPathFactory, name: str) -> Iterator[Path | None]:
    """A folder ``name`` the test run builds once, however many processes it
    runs in (pytest-xdist): yields the new folder in ``run_folder`` to build
    into, or None when it is built already; the others wait on a lock for the
    build and then get None. A failed build is removed, and the next process
    to ask builds again (and fails with its own message)."""
    shared = run_folder(tmp_path_factory)
    folder, done = shared / name, shared / f"{name}.built"
    with (shared / f"{name}.lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # released when the file closes
        if done.exists():
            yield None
            return
        shutil.rmtree(folder, ignore_errors=True)
        folder.mkdir()
        try:
            yield folder
        except BaseException:
            shutil.rmtree(folder, ignore_errors=True)
            raise
        done.touch()


@pytest.fixture(scope="session")
def built_wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    with built_once(tmp_path_factory, "wheel") as build:
        if build is not None:
            source = tracked_copy(build / "source")
            run(sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w", build, source)
    (wheel,) = (run_folder(tmp_path_factory) / "wheel").glob("echomq_dashboard-*.whl")
    return wheel


def host_env(**extra: str) -> dict[str, str]:
    """The environment of the host project's processes: the checkout is not on the path."""
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    env.pop("DJANGO_SETTINGS_MODULE", None)
    return {**env, "DJANGO_SETTINGS_MODULE": "hostsite.settings", **extra}


@pytest.fixture(scope="session")
def host_python(built_wheel: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Made once per run: each test process mounting it runs its own host site."""
    with built_once(tmp_path_factory, "host") as build:
        if build is not None:
            run(sys.executable, "-m", "venv", build / "venv")
            python = build / "venv" / "bin" / "python"
            run(python, "-m", "pip", "install", "-q", "--disable-pip-version-check", built_wheel)
    return run_folder(tmp_path_factory) / "host" / "venv" / "bin" / "python"


@pytest.fixture(scope="session")
def host_site(
    host_python: Path, redis_url: str, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[DashboardServer]:
    workdir = tmp_path_factory.mktemp("hostsite")
    env = host_env(
        REDIS_URL=redis_url,
        HOST_DB=str(workdir / "db.sqlite3"),
        HOST_STATIC_ROOT=str(workdir / "static"),
        PYTHONUNBUFFERED="1",
    )
    manage = (host_python, "manage.py")
    run(*manage, "check", "--fail-level", "WARNING", cwd=HOST_PROJECT, env=env)
    run(*manage, "migrate", "--noinput", cwd=HOST_PROJECT, env=env)
    run(*manage, "collectstatic", "--noinput", "-v0", cwd=HOST_PROJECT, env=env)
    make_users = MAKE_USERS.format(users=USERS, password=PASSWORD)
    run(*manage, "shell", "-c", make_users, cwd=HOST_PROJECT, env=env)
    server = DashboardServer(
        env,
        free_port(),
        workdir / "daphne.log",
        python=str(host_python),
        cwd=HOST_PROJECT,
        application="hostsite.asgi:application",
        ready_path=SIGN_IN,
    )
    server.start()
    yield server
    server.stop()


@dataclass
class Answer:
    status: int
    headers: dict[str, str]
    body: str

    def json(self) -> Any:
        return json.loads(self.body)


class _NoRedirects(urllib.request.HTTPRedirectHandler):
    def redirect_request(self, *args: Any, **kwargs: Any) -> None:
        return None


@dataclass
class Browserless:
    """One user's HTTP client for a server: cookies kept, redirects not followed."""

    base_url: str
    jar: http.cookiejar.CookieJar = field(default_factory=http.cookiejar.CookieJar)

    def __post_init__(self) -> None:
        self.opener = urllib.request.build_opener(
            urllib.request.HTTPCookieProcessor(self.jar), _NoRedirects()
        )

    def request(
        self,
        method: str,
        path: str,
        body: bytes | None = None,
        headers: dict[str, str] | None = None,
    ) -> Answer:
        # Our own http:// test server, never user input.
        request = urllib.request.Request(  # noqa: S310
            self.base_url + path, body, headers or {}, method=method
        )
        try:
            with self.opener.open(request, timeout=30) as response:
                return Answer(response.status, dict(response.headers), response.read().decode())
        except urllib.error.HTTPError as error:
            return Answer(error.code, dict(error.headers), error.read().decode())

    def get(self, path: str) -> Answer:
        return self.request("GET", path)

    def csrf_token(self) -> str:
        token = next((c.value for c in self.jar if c.name == "csrftoken"), None)
        if token is None:  # any page with a form sets it
            self.get(SIGN_IN)
            token = next(c.value for c in self.jar if c.name == "csrftoken")
        return str(token)

    def post_form(self, path: str, fields: dict[str, str | list[str]]) -> Answer:
        body = urllib.parse.urlencode(
            {"csrfmiddlewaretoken": self.csrf_token(), **fields}, doseq=True
        ).encode()
        headers = {
            "Content-Type": "application/x-www-form-urlencoded",
            "Referer": self.base_url + path,
        }
        return self.request("POST", path, body, headers)

    def post_json(self, path: str, payload: dict[str, Any]) -> Answer:
        headers = {
            "Content-Type": "application/json",
            "X-CSRFToken": self.csrf_token(),
            "Referer": self.base_url + path,
        }
        return self.request("POST", path, json.dumps(payload).encode(), headers)

    def sign_in(self, email: str) -> None:
        answer = self.post_form(SIGN_IN, {"username": email, "password": PASSWORD, "next": "/"})
        assert answer.status == 302, f"the host's sign-in refused {email}: {answer.body[:500]}"

    def cookie_header(self) -> str:
        return "; ".join(f"{c.name}={c.value}" for c in self.jar)


def page_links(html: str) -> list[str]:
    """Every href, src and action of a page."""
    return re.findall(r'(?:href|src|action)="([^"]*)"', html)
