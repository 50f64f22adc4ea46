"""Deploying like a Django app (docs/deploy.md).

The production settings with the environment the document gives pass
``manage.py check --deploy`` with no warning, and refuse to start without a
secret key or host names, or with DEBUG on. DATABASE_URL selects the database.
Every line a real server process writes, daphne's or uvicorn's with several
workers, has the one log format, plain or JSON, whoever logged it.
"""

from __future__ import annotations

import base64
import http.client
import http.cookiejar
import json
import re
import secrets
import socket
import subprocess
import sys
import urllib.error
import urllib.parse
import urllib.request
from pathlib import Path
from typing import Any

import pytest
from redis import Redis
from websockets.sync.client import connect as ws_connect

from tests.e2e.server import (
    USERNAME,
    free_port,
    prepare,
    submit_login,
    terminate,
    wait_until_serving,
)
from tests.e2e.shipped import documented_daphne, documented_environment, kept_environment

ROOT = Path(__file__).resolve().parents[1]


def run_manage(variables: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    env = kept_environment() | variables
    return subprocess.run(
        [sys.executable, "manage.py", *args],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=120,
    )  # fmt: skip


def test_the_documented_production_environment_passes_check_deploy() -> None:
    done = run_manage(documented_environment(), "check", "--deploy", "--fail-level", "WARNING")
    assert done.returncode == 0, done.stdout + done.stderr
    assert "System check identified no issues" in done.stdout


def test_the_production_profile_turns_on_all_but_the_two_hsts_choices() -> None:
    """Without the document's two HSTS lines only their warnings remain: cookies,
    HTTPS redirect and HSTS itself are on by default."""
    variables = documented_environment()
    del variables["SECURE_HSTS_INCLUDE_SUBDOMAINS"], variables["SECURE_HSTS_PRELOAD"]
    done = run_manage(variables, "check", "--deploy", "--fail-level", "WARNING")
    assert done.returncode != 0
    assert set(re.findall(r"\((security\.\w+)\)", done.stderr)) == {
        "security.W005",
        "security.W021",
    }, done.stderr


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"SECRET_KEY": ""}, "SECRET_KEY must be set in production"),
        ({"ALLOWED_HOSTS": ""}, "ALLOWED_HOSTS must be set in production"),
        ({"DEBUG": "1"}, "DEBUG must be off in production"),
    ],
)
def test_the_production_profile_refuses_to_start_unsafe(
    change: dict[str, str], message: str
) -> None:
    done = run_manage(documented_environment() | change, "check")
    assert done.returncode != 0
    assert message in done.stderr


def settings_of(variables: dict[str, str], expression: str) -> Any:
    """``expression`` over the settings module, evaluated in a process with ``variables``."""
    code = f"import json; from django.conf import settings as s; print(json.dumps({expression}))"
    done = run_manage(variables, "shell", "--no-imports", "-c", code)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def test_database_url_selects_the_database_the_processes_share() -> None:
    variables = documented_environment()
    database = settings_of(variables, 's.DATABASES["default"]')
    assert database["ENGINE"] == "django.db.backends.postgresql"
    assert (database["NAME"], database["HOST"], database["PORT"]) == ("echomq", "127.0.0.1", 5432)
    assert (database["USER"], database["PASSWORD"]) == ("echomq", "db-password")
    assert database["CONN_HEALTH_CHECKS"] is True
    del variables["DATABASE_URL"]
    variables["ECHOMQ_DB"] = "/srv/echomq/db.sqlite3"
    database = settings_of(variables, 's.DATABASES["default"]')
    assert (database["ENGINE"], database["NAME"]) == (
        "django.db.backends.sqlite3",
        "/srv/echomq/db.sqlite3",
    )


@pytest.mark.parametrize(
    ("variables", "message"),
    [
        ({"LOG_LEVEL": "LOUD"}, "LOG_LEVEL must be"),
        ({"LOG_FORMAT": "xml"}, "LOG_FORMAT must be plain or json"),
    ],
)
def test_a_bad_log_setting_is_refused_by_name(variables: dict[str, str], message: str) -> None:
    done = run_manage(documented_environment() | variables, "check")
    assert done.returncode != 0
    assert message in done.stderr


# --- logs: every line of a real server process in one format ---------------------------

PLAIN = re.compile(
    r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d{3} (?P<level>DEBUG|INFO|WARNING|ERROR|CRITICAL)"
    r" (?P<logger>[\w.]+) (?P<message>\S.*)"
)
QUEUE = "deploy-logs"


def parse_log(output: str, log_format: str) -> list[dict[str, str]]:
    """Each line as {level, logger, message}; fails on a line of any other format."""
    records = []
    for line in output.splitlines():
        if log_format == "json":
            record = json.loads(line)
            assert isinstance(record, dict), line
            assert re.fullmatch(r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d{3}", record["time"]), line
        else:
            found = PLAIN.fullmatch(line)
            assert found is not None, f"not in the log format: {line!r}"
            record = found.groupdict()
        assert record["level"] in {"DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL"}, line
        records.append(record)
    return records


def wait_for_login_page(
    process: subprocess.Popen[bytes],
    base_url: str,
    log: Path,
    headers: dict[str, str] | None = None,
) -> None:
    login = urllib.request.Request(base_url + "/login/", headers=headers or {})  # noqa: S310
    wait_until_serving("the server", process, login, log)


def use_the_dashboard(base_url: str) -> None:
    """What makes each part log: a wrong password (django-axes), a page that does
    not exist (Django), an action (our audit logger), a live socket."""
    jar = http.cookiejar.CookieJar()
    opener = urllib.request.build_opener(urllib.request.HTTPCookieProcessor(jar))
    assert submit_login(opener, base_url, "not-the-password") == 200  # the form again
    assert submit_login(opener, base_url) == 200  # redirected to the overview
    with pytest.raises(urllib.error.HTTPError) as missing:
        opener.open(base_url + "/no-such-page/")
    assert missing.value.code == 404
    cookies = {cookie.name: cookie.value for cookie in jar}
    pause = urllib.request.Request(  # noqa: S310 (our own http:// URL)
        f"{base_url}/api/queues/bull/{QUEUE}/bulk/",
        json.dumps({"action": "pause"}).encode(),
        {"Content-Type": "application/json", "X-CSRFToken": cookies["csrftoken"]},
    )
    with opener.open(pause) as response:
        assert response.status == 200
    cookie_header = "; ".join(f"{name}={value}" for name, value in cookies.items())
    socket_url = base_url.replace("http://", "ws://") + "/ws/live/"
    with ws_connect(
        socket_url, additional_headers={"Cookie": cookie_header, "Origin": base_url}
    ) as socket:
        socket.send(json.dumps({"type": "subscribe", "queues": [{"queue": f"bull:{QUEUE}"}]}))
        assert json.loads(socket.recv(timeout=10))["type"] == "subscribed"


@pytest.fixture(scope="module")
def prepared_env(redis_url: str, tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    """A migrated database with the test user, shared by this module's servers."""
    return prepare(redis_url, tmp_path_factory.mktemp("deploy"), ECHOMQ_QUEUES=QUEUE)


@pytest.fixture
def server_env(redis_client: Redis, prepared_env: dict[str, str]) -> dict[str, str]:
    """The prepared environment on a flushed Redis."""
    return prepared_env


def serve_and_use(args: list[str], env: dict[str, str], port: int, log: Path) -> str:
    """Start a server, use the dashboard through it, stop it; everything it wrote."""
    with log.open("wb") as out:
        process = subprocess.Popen(args, cwd=ROOT, env=env, stdout=out, stderr=subprocess.STDOUT)
    try:
        base_url = f"http://127.0.0.1:{port}"
        wait_for_login_page(process, base_url, log)
        use_the_dashboard(base_url)
    finally:
        terminate(process)
    return log.read_text(errors="replace")


def loggers_of(records: list[dict[str, str]]) -> set[str]:
    return {record["logger"] for record in records}


@pytest.mark.parametrize("log_format", ["plain", "json"])
def test_every_line_daphne_writes_has_the_one_format(
    server_env: dict[str, str], tmp_path: Path, log_format: str
) -> None:
    port = free_port()
    # docs/deploy.md's daphne command: -v 0 leaves out daphne's own access log,
    # a format of its own on stdout (the proxy logs every request).
    args = [sys.executable, *documented_daphne(port)]
    env = server_env | {"LOG_FORMAT": log_format, "LOG_LEVEL": "INFO"}

    output = serve_and_use(args, env, port, tmp_path / "daphne.log")

    records = parse_log(output, log_format)
    loggers = loggers_of(records)
    assert {"daphne.cli", "daphne.server", "django.request", "echomq.audit"} <= loggers, output
    assert any(name.startswith("axes.") for name in loggers), output
    audit = [r["message"] for r in records if r["logger"] == "echomq.audit"]
    assert len(audit) == 1
    assert audit[0].startswith(f"user={USERNAME} action=pause queue=bull:{QUEUE} "), audit


def test_every_line_of_uvicorn_with_workers_has_the_one_format(
    server_env: dict[str, str], tmp_path: Path
) -> None:
    """The supervisor logs before any worker loads Django: docs/deploy.md gives it
    the settings' LOGGING as a file (--log-config), written by this command."""
    env = server_env | {"LOG_FORMAT": "json", "LOG_LEVEL": "INFO"}
    config = tmp_path / "logging.json"
    dump = "import json; from dashboard.settings import LOGGING; print(json.dumps(LOGGING))"
    written = subprocess.run(
        [sys.executable, "-c", dump], cwd=ROOT, env=env, capture_output=True, text=True, check=True
    )
    config.write_text(written.stdout)
    port = free_port()
    args = [sys.executable, "-m", "uvicorn", "--workers", "2", "--log-config", str(config)]
    args += ["--host", "127.0.0.1", "--port", str(port), "dashboard.asgi:application"]

    output = serve_and_use(args, env, port, tmp_path / "uvicorn.log")

    records = parse_log(output, "json")
    loggers = loggers_of(records)
    assert {"uvicorn.error", "uvicorn.access", "django.request", "echomq.audit"} <= loggers
    messages = [record["message"] for record in records]
    assert any(m.startswith("Started parent process") for m in messages), output
    assert sum(m.startswith("Started server process") for m in messages) == 2, output
    assert not any("color_message" in record for record in records)


# --- behind the TLS proxy: what nginx forwards, to the documented daphne ------------------

PUBLIC_HOST = "queues.example.com"
# What docs/deploy.md's nginx adds to each request it forwards over plain http.
FORWARDED = {"Host": PUBLIC_HOST, "X-Forwarded-Proto": "https", "X-Forwarded-For": "203.0.113.9"}


def plain_request(port: int, headers: dict[str, str]) -> tuple[str, dict[str, str]]:
    """One GET /login/ over a raw connection: its status line and headers, unfollowed."""
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    connection.putrequest("GET", "/login/", skip_host=True)
    for name, value in headers.items():
        connection.putheader(name, value)
    connection.endheaders()
    response = connection.getresponse()
    answer = (str(response.status), {k.lower(): v for k, v in response.getheaders()})
    connection.close()
    return answer


def socket_handshake(port: int, headers: dict[str, str]) -> str:
    """The status line of a WebSocket handshake to /ws/live/, as the browser sends it."""
    request = [
        "GET /ws/live/ HTTP/1.1",
        "Upgrade: websocket",
        "Connection: Upgrade",
        "Sec-WebSocket-Key: " + base64.b64encode(secrets.token_bytes(16)).decode(),
        "Sec-WebSocket-Version: 13",
        *(f"{name}: {value}" for name, value in headers.items()),
    ]
    with socket.create_connection(("127.0.0.1", port), timeout=10) as connection:
        connection.sendall(("\r\n".join(request) + "\r\n\r\n").encode())
        return connection.recv(4096).split(b"\r\n", 1)[0].decode()


@pytest.mark.parametrize("trust_the_proxy_header", [True, False])
def test_the_documented_daphne_behind_the_tls_proxy(
    redis_client: Redis, redis_url: str, tmp_path: Path, trust_the_proxy_header: bool
) -> None:
    """Pages: https only, secure cookies, HSTS. Sockets: daphne puts no scheme in a
    WebSocket's scope, so the page's https:// Origin matches only when Django
    trusts the proxy's X-Forwarded-Proto (SECURE_PROXY_SSL_HEADER, as the
    document sets it); without it every live page behind TLS is refused."""
    variables = documented_environment()
    variables |= {"REDIS_URL": redis_url, "ECHOMQ_DB": str(tmp_path / "db.sqlite3")}
    del variables["DATABASE_URL"]
    if not trust_the_proxy_header:
        del variables["SECURE_PROXY_SSL_HEADER"]
    env = kept_environment() | variables
    port = free_port()
    log = tmp_path / "daphne.log"
    with log.open("wb") as out:
        process = subprocess.Popen(
            [sys.executable, *documented_daphne(port)],
            cwd=ROOT, env=env, stdout=out, stderr=subprocess.STDOUT,
        )  # fmt: skip
    try:
        wait_for_login_page(process, f"http://127.0.0.1:{port}", log, FORWARDED)
        status, headers = plain_request(port, {"Host": PUBLIC_HOST})
        assert (status, headers["location"]) == ("301", f"https://{PUBLIC_HOST}/login/")
        status, headers = plain_request(port, FORWARDED)
        assert status == "200"
        assert headers["strict-transport-security"].startswith("max-age=31536000")
        assert "; Secure" in headers["set-cookie"]
        page_origin = {"Origin": f"https://{PUBLIC_HOST}"}
        answer = socket_handshake(port, FORWARDED | page_origin)
        if trust_the_proxy_header:
            assert answer == "HTTP/1.1 101 Switching Protocols"
        else:
            assert answer.startswith("HTTP/1.1 403")
        foreign = {"Origin": "https://evil.example.net"}
        assert socket_handshake(port, FORWARDED | foreign).startswith("HTTP/1.1 403")
    finally:
        terminate(process)
