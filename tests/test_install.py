"""The README's two commands, run as a new user would: a clean checkout, the
system Python (``/usr/bin/python3``), no virtual environment active, nothing
installed beforehand.

``./run.sh dashboard`` must make its own virtual environment, install the
project into it, start the dashboard with demo traffic, print the URL and a
login that works, and then keep the terminal quiet. ``./run.sh test`` must
reuse that environment and run ruff, mypy and pytest (here on one small test
file: the whole suite is what is running this test).

Slow (a fresh environment downloads every dependency), so it runs once per
suite; ``-m "not install"`` leaves it out while developing.
"""

from __future__ import annotations

import http.cookiejar
import os
import re
import shutil
import subprocess
import time
import urllib.parse
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.e2e.server import free_port, terminate
from tests.hosting import tracked_copy

SYSTEM_PYTHON = Path("/usr/bin/python3")
pytestmark = [pytest.mark.install, pytest.mark.timeout(1500)]


@pytest.fixture(scope="module")
def checkout(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The project's tracked files as they are on disk now, in a fresh folder."""
    if not SYSTEM_PYTHON.exists():
        pytest.fail(f"{SYSTEM_PYTHON} is missing: this test checks the system Python")
    return tracked_copy(tmp_path_factory.mktemp("clean") / "echomq")


def user_env(**extra: str) -> dict[str, str]:
    """A login shell's environment: no virtual environment, no pyenv, no Python path."""
    env = {
        "PATH": "/usr/local/bin:/usr/bin:/bin:/usr/sbin:/sbin",
        "HOME": os.environ.get("HOME", "/root"),
        "LANG": "C.UTF-8",
        "PYTHON": str(SYSTEM_PYTHON),
    }
    # The package index settings of this machine (mirrors, certificates), if any.
    env.update({k: v for k, v in os.environ.items() if k.startswith("PIP_")})
    env.update(extra)
    return env


def run_sh(
    checkout: Path, *args: str, env: dict[str, str] | None = None, timeout: float = 900
) -> subprocess.CompletedProcess[str]:
    """``./run.sh <args>`` in ``checkout`` as that user would run it; what it said."""
    return subprocess.run(
        ["./run.sh", *args],
        cwd=checkout,
        env=env or user_env(),
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=timeout,
    )


@pytest.fixture(scope="module")
def dashboard(checkout: Path) -> Iterator[tuple[str, Path]]:
    """``./run.sh dashboard`` running in the clean checkout: (its URL, its output file)."""
    port = free_port()
    log_path = checkout / "dashboard.log"
    with log_path.open("wb") as log:
        process = subprocess.Popen(
            ["./run.sh", "dashboard", "--port", str(port)],
            cwd=checkout,
            env=user_env(),
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    try:
        url = wait_for_banner(process, log_path, timeout=600)
        yield url, log_path
    finally:
        terminate(process)


def wait_for_banner(process: subprocess.Popen[bytes], log_path: Path, timeout: float) -> str:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        output = log_path.read_text(errors="replace")
        found = re.search(r"EchoMQ dashboard\s+(http://\S+)", output)
        if found and "stop with Ctrl+C" in output:
            return found.group(1)
        if process.poll() is not None:
            break
        time.sleep(0.5)
    raise AssertionError(f"./run.sh dashboard printed no URL:\n{log_path.read_text()[-4000:]}")


def log_in(url: str, username: str, password: str) -> urllib.request.OpenerDirector:
    """Log in through the form as a browser would; the opener keeps the session."""
    jar = http.cookiejar.CookieJar()
    opener = urllib.request.build_opener(urllib.request.HTTPCookieProcessor(jar))
    deadline = time.monotonic() + 30
    while True:  # the first page of a fresh install may take a moment to render
        try:
            form = opener.open(url + "login/", timeout=10).read().decode()
            break
        except OSError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.5)
    token = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', form)
    assert token, form[:2000]
    body = urllib.parse.urlencode(
        {"csrfmiddlewaretoken": token.group(1), "username": username, "password": password}
    ).encode()
    # http:// on loopback, built from the URL the command printed.
    request = urllib.request.Request(url + "login/", data=body, headers={"Referer": url})  # noqa: S310
    opener.open(request, timeout=30)
    return opener


def test_the_dashboard_command_installs_into_its_own_environment_and_serves_the_demo(
    checkout: Path, dashboard: tuple[str, Path]
) -> None:
    url, log_path = dashboard
    venv_python = checkout / ".venv" / "bin" / "python"
    assert venv_python.exists(), "run.sh made no project-local virtual environment"
    base = subprocess.run(
        [str(venv_python), "-c", "import sys; print(sys.base_prefix)"],
        check=True, capture_output=True, text=True,
    ).stdout.strip()  # fmt: skip
    assert base == "/usr", f"the environment was made from {base}, not the system Python"

    banner = log_path.read_text()
    login = re.search(r"login\s+(\S+) / (\S+)", banner)
    assert login, banner
    opener = log_in(url, login.group(1), login.group(2))
    overview = opener.open(url, timeout=30)
    assert overview.status == 200
    assert "/login/" not in overview.url, "the printed login did not log in"
    page = overview.read().decode()
    assert 'data-page="overview"' in page, page[:2000]

    # The counts are on the page: after the banner, the terminal stays quiet
    # while demo traffic runs.
    settled = log_path.read_text()
    time.sleep(8)
    assert log_path.read_text() == settled, (
        "output after the banner:\n" + (log_path.read_text()[len(settled) :][-3000:])
    )


def test_the_test_command_reuses_the_environment_and_runs_the_checks(
    checkout: Path, dashboard: tuple[str, Path]
) -> None:
    done = run_sh(checkout, "test", "tests/test_errors.py", "-q", "-p", "no:cacheprovider")
    output = done.stdout + done.stderr
    assert done.returncode == 0, output[-4000:]
    assert "creating .venv" not in output, "the second command made its environment again"
    assert "installing the project" not in output, "the second command installed again"
    assert re.search(r"\d+ passed", output), output[-2000:]
    assert "Success: no issues found" in output  # mypy ran


def test_a_failed_install_stops_with_a_message_and_is_tried_again_next_time(
    tmp_path: Path,
) -> None:
    """No package index (a proxy's certificate unknown, a network down): the
    command says the install failed and stops, instead of starting the app
    without its packages, and does not mark the environment installed."""
    checkout = tracked_copy(tmp_path / "echomq")
    env = user_env(PIP_NO_INDEX="1", PIP_FIND_LINKS=str(tmp_path / "no-wheels-here"))
    done = run_sh(checkout, "dashboard", "--port", str(free_port()), env=env, timeout=300)
    assert done.returncode != 0
    assert "installing the dependencies failed" in done.stderr
    assert "Traceback" not in done.stdout + done.stderr
    assert not list((checkout / ".venv").glob(".echomq-installed"))


def test_an_npm_that_cannot_reach_its_registry_is_named_and_the_checks_still_run(
    checkout: Path, tmp_path: Path
) -> None:
    """npm's own words (--silent hid them) and ours, then ruff, mypy and the
    tests as usual: only the accessibility tests need axe-core, and they say so."""
    fake = tmp_path / "bin"
    fake.mkdir()
    npm = fake / "npm"
    # As npm does when the registry cannot be reached: its error, unless --silent.
    npm.write_text(
        "#!/bin/sh\n"
        'case " $* " in *" --silent "*) exit 1 ;; esac\n'
        "echo 'npm error code ECONNREFUSED' >&2\n"
        "echo 'npm error request to https://registry.npmjs.org/axe-core failed' >&2\n"
        "exit 1\n"
    )
    npm.chmod(0o755)
    # The module's checkout is shared: an earlier test's `./run.sh test` may
    # have installed axe-core already, and then npm is never asked.
    shutil.rmtree(checkout / ".cache" / "axe", ignore_errors=True)
    env = user_env()
    env["PATH"] = f"{fake}:{env['PATH']}"
    done = run_sh(checkout, "test", "tests/test_errors.py", "-q", "-p", "no:cacheprovider", env=env)
    assert done.returncode == 0, (done.stdout + done.stderr)[-4000:]
    assert "installing axe-core" in done.stderr, done.stderr[-3000:]
    assert "with npm failed" in done.stderr
    assert "npm error request to https://registry.npmjs.org/axe-core failed" in done.stderr
    assert re.search(r"\d+ passed", done.stdout), done.stdout[-2000:]
