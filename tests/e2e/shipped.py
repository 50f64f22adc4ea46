"""The stand-alone site exactly as docs/deploy.md ships it, on a Redis topology.

What the suite's other fixtures change (the collector off, development
settings, one process, no proxy) this harness leaves as a user gets it:

- the environment is the document's environment file (``dashboard.settings_production``,
  its secret key filled in), with only what every user sets to their own:
  ``REDIS_URL`` (the topology's), the host name, the database (the
  document's one-host SQLite, ``ECHOMQ_DB``), static files served by the
  dashboard (the document's default: no ``STATIC_ROOT``), and what the
  topology needs (a cluster's hash-tagged prefix, ``ECHOMQ_PREFIXES``).
  Nothing else of this process's environment leaks in: the history
  collector is on, as shipped;
- each server process is the document's daphne command line, read out of
  the document, on a port of its own;
- they sit behind ``Front`` (tests/e2e/front.py), which does what the
  document's nginx does: TLS, the forwarded headers, round robin.

A topology is anything with ``url``, ``start()`` and ``stop()``
(``SingleRedis``, ``ClusterRedis``, ``Several``, ``SentinelRedis``,
``TlsOnlyRedis``, ``AclRedis``). The browser checks every topology shares are ``on_call_walk``.
"""

from __future__ import annotations

import http.cookiejar
import json
import os
import re
import secrets
import shutil
import ssl
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from playwright.sync_api import Browser, Page, expect
from prometheus_client.parser import text_string_to_metric_families
from redis import Redis

from queues.connection import connect
from queues.queue import Queue
from queues.read.refs import QueueRef
from queues.redis_server import LocalRedisServer, server_binary
from tests.acl import ACL_PASSWORDS, acl_rules, documented_acl
from tests.cluster import LocalCluster
from tests.e2e.front import Front
from tests.e2e.server import (
    CREATE_USER,
    PASSWORD,
    ROOT,
    USERNAME,
    DashboardServer,
    free_port,
    manage,
    submit_login,
    terminate_all,
)
from tests.sentinel import LocalSentinelSet
from tests.tls import TlsRedis, make_certificates

DEPLOY_DOC = ROOT / "docs" / "deploy.md"
ENV_FILE = "# /etc/echomq/dashboard.env"
# What a server process keeps of this one's environment: no setting leaks in.
KEPT = ("PATH", "HOME", "LANG", "TMPDIR")
# The user's own host name: the one the browser reaches the front by.
HOST = "127.0.0.1"
# The bearer token Prometheus would send (docs/history.md: without it /metrics is off).
METRICS_TOKEN = "prometheus-" + "x" * 24
COHORT_WORKER = Path(__file__).with_name("cohort_worker.py")


def documented_environment() -> dict[str, str]:
    """The variables of the environment file in docs/deploy.md, its secret key filled in."""
    blocks = re.findall(r"```sh\n(.*?)```", DEPLOY_DOC.read_text(), re.DOTALL)
    (block,) = [block for block in blocks if block.startswith(ENV_FILE)]
    variables = {}
    for line in block.splitlines():
        if line.strip() and not line.startswith("#"):
            name, _, value = line.partition("=")
            variables[name.strip()] = value.strip()
    assert variables["SECRET_KEY"] == "", "the document must not show a usable key"
    # What the document says to run to make one.
    variables["SECRET_KEY"] = secrets.token_urlsafe(50)
    return variables


def documented_daphne(port: int) -> list[str]:
    """docs/deploy.md's daphne command line (after ``python``), on ``port``."""
    found = re.search(r"^python (-m daphne .*-p )8101( .*)$", DEPLOY_DOC.read_text(), re.M)
    assert found is not None, "docs/deploy.md gives no daphne command"
    return f"{found.group(1)}{port}{found.group(2)}".split()


def kept_environment() -> dict[str, str]:
    return {name: os.environ[name] for name in KEPT if name in os.environ}


# -- topologies ----------------------------------------------------------------------


class Topology(Protocol):
    @property
    def url(self) -> str: ...

    def start(self) -> object: ...

    def stop(self) -> None: ...


@dataclass
class SingleRedis:
    """One redis-server on a TCP port, as docs/deploy.md's ``REDIS_URL``."""

    server: LocalRedisServer | None = None

    @property
    def url(self) -> str:
        assert self.server is not None
        return self.server.url

    def start(self) -> SingleRedis:
        self.server = LocalRedisServer(server_binary()[0], port=free_port()).start()
        return self

    def stop(self) -> None:
        if self.server is not None:
            self.server.stop()


@dataclass
class ClusterRedis:
    """Three primaries (tests/cluster.py), reached by a seed URL with ``?cluster=1``."""

    cluster: LocalCluster = field(default_factory=LocalCluster)

    @property
    def url(self) -> str:
        return self.cluster.url

    def start(self) -> ClusterRedis:
        self.cluster.start()
        return self

    def stop(self) -> None:
        self.cluster.stop()


@dataclass
class Several:
    """Several Redis servers served by one dashboard (docs/configuration.md,
    "Several Redis servers"): the first is ``REDIS_URL``'s, each other one an entry of
    ``ECHOMQ_CONNECTIONS`` named by ``names`` with its queues' ``prefixes``."""

    topologies: list[Topology]
    names: list[str]
    prefixes: list[list[str]]

    @property
    def url(self) -> str:
        return self.topologies[0].url

    def start(self) -> Several:
        for topology in self.topologies:
            topology.start()
        return self

    def stop(self) -> None:
        for topology in self.topologies:
            topology.stop()

    def connections_setting(self) -> str:
        """``ECHOMQ_CONNECTIONS`` for the servers after the first."""
        entries = [
            {"name": name, "url": topology.url, "prefixes": prefixes}
            for topology, name, prefixes in zip(
                self.topologies[1:], self.names, self.prefixes, strict=True
            )
        ]
        return json.dumps(entries)


@dataclass
class SentinelRedis:
    """A master, a replica and three sentinels (tests/sentinel.py), reached by
    docs/deploy.md's ``redis+sentinel://`` URL; ``sentinels`` fails it over."""

    sentinels: LocalSentinelSet = field(default_factory=LocalSentinelSet)

    @property
    def url(self) -> str:
        return self.sentinels.url

    def start(self) -> SentinelRedis:
        self.sentinels.start()
        return self

    def stop(self) -> None:
        self.sentinels.stop()


@dataclass
class TlsOnlyRedis:
    """A redis-server speaking TLS only (tests/tls.py), with certificates made
    at start; ``check_clients``: it asks for the client's certificate, which
    the URL then names."""

    check_clients: bool
    redis: TlsRedis | None = None

    @property
    def url(self) -> str:
        assert self.redis is not None
        return self.redis.url

    def start(self) -> TlsOnlyRedis:
        folder = Path(tempfile.mkdtemp(prefix="echomq-tls-"))
        self.redis = TlsRedis(make_certificates(folder), self.check_clients).start()
        return self

    def stop(self) -> None:
        if self.redis is not None:
            self.redis.stop()
            shutil.rmtree(self.redis.certificates.ca.parent, ignore_errors=True)


@dataclass
class AclRedis:
    """One redis-server whose users are docs/deploy.md's ACL file: the site logs
    in as ``user`` (the acting dashboard's by default), the worker as the
    worker's user (``worker_url``); the default user is the test's own."""

    user: str = "echomq-dashboard"
    single: SingleRedis = field(default_factory=SingleRedis)

    @property
    def url(self) -> str:
        return self.user_url(self.user)

    @property
    def worker_url(self) -> str:
        return self.user_url("echomq-worker")

    @property
    def admin_url(self) -> str:
        return self.single.url

    def user_url(self, name: str) -> str:
        assert self.single.server is not None
        return f"redis://{name}:{ACL_PASSWORDS[name]}@127.0.0.1:{self.single.server.port}/0"

    def start(self) -> AclRedis:
        self.single.start()
        admin = connect(self.single.url)
        for name, rules in documented_acl().items():
            admin.execute_command("ACL", "SETUSER", name, "reset", *acl_rules(rules))
        admin.close()
        return self

    def stop(self) -> None:
        self.single.stop()


def worker_url(topology: Topology) -> str:
    """The URL a worker of the topology is given: its own user's where it has one."""
    return topology.worker_url if isinstance(topology, AclRedis) else topology.url


# -- the site ------------------------------------------------------------------------


@dataclass
class ShippedSite:
    """``processes`` daphne processes as documented, behind the TLS front."""

    topology: Topology
    workdir: Path
    processes: int = 1
    # What the user of this topology sets beyond the document (e.g. a prefix).
    settings: dict[str, str] = field(default_factory=dict)
    servers: list[DashboardServer] = field(default_factory=list)
    front: Front | None = None

    @property
    def url(self) -> str:
        assert self.front is not None
        return self.front.url

    @property
    def env(self) -> dict[str, str]:
        variables = documented_environment()
        del variables["DATABASE_URL"], variables["STATIC_ROOT"]
        variables |= {
            "ALLOWED_HOSTS": HOST,
            "REDIS_URL": self.topology.url,
            "ECHOMQ_DB": str(self.workdir / "db.sqlite3"),
            "ECHOMQ_METRICS_TOKEN": METRICS_TOKEN,
            **self.settings,
        }
        return kept_environment() | {"PYTHONPATH": str(ROOT)} | variables

    def start(self) -> ShippedSite:
        env = self.env
        manage(env, "migrate", "--noinput")
        manage(env, "shell", "-c", CREATE_USER.format(username=USERNAME, password=PASSWORD))
        for number in range(self.processes):
            port = free_port()
            server = DashboardServer(
                env,
                port,
                self.workdir / f"daphne-{number}.log",
                argv=documented_daphne(port),
                ready_headers={"Host": HOST, "X-Forwarded-Proto": "https"},
            )
            server.start(timeout=60)
            self.servers.append(server)
        self.front = Front([server.port for server in self.servers], self.workdir).start()
        return self

    def stop(self) -> None:
        if self.front is not None:
            self.front.stop()
        for server in self.servers:
            server.stop()

    def logs(self) -> str:
        return "\n".join(server.log() for server in self.servers)

    def redis(self) -> Redis:
        """A client of the topology, for the test's own writes and looks (with
        ACL users, as the default user: the test's own)."""
        admin = isinstance(self.topology, AclRedis)
        return connect(self.topology.admin_url if admin else self.topology.url)

    def metrics(self) -> str:
        """/metrics through the front, as Prometheus scrapes it."""
        request = urllib.request.Request(  # noqa: S310 (our own https:// URL)
            self.url + "/metrics", headers={"Authorization": f"Bearer {METRICS_TOKEN}"}
        )
        unverified = ssl._create_unverified_context()  # noqa: S323 (the test's own certificate)
        with urllib.request.urlopen(request, timeout=10, context=unverified) as answer:  # noqa: S310
            text: str = answer.read().decode()
            return text

    def worker(self, queue: str, prefix: str) -> Worker:
        """Our runtime's worker in a process of its own (tests/e2e/cohort_worker.py)."""
        log_path = self.workdir / f"worker-{queue}.log"
        env = kept_environment() | {"PYTHONPATH": str(ROOT), "REDIS_URL": worker_url(self.topology)}
        with log_path.open("wb") as log:
            process = subprocess.Popen(
                [sys.executable, str(COHORT_WORKER), queue, "--prefix", prefix, "--sleep", "0"],
                cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT,
            )  # fmt: skip
        worker = Worker(process, log_path)
        wait_until(lambda: "ready" in log_path.read_text(), 20, f"the worker of {queue} started")
        return worker


@dataclass
class Session:
    """A user logged in through the front (as a browser would), who may also
    ask one server process directly (as the front would, with its headers)."""

    site: ShippedSite
    cookies: dict[str, str]

    @classmethod
    def log_in(cls, site: ShippedSite) -> Session:
        jar = http.cookiejar.CookieJar()
        unverified = ssl._create_unverified_context()  # noqa: S323 (the test's own certificate)
        opener = urllib.request.build_opener(
            urllib.request.HTTPSHandler(context=unverified),
            urllib.request.HTTPCookieProcessor(jar),
        )
        assert submit_login(opener, site.url) == 200
        return cls(site, {cookie.name: cookie.value for cookie in jar})

    def get_json(self, path: str, process: int) -> Any:
        """GET ``path`` from server process number ``process``, directly."""
        cookie = "; ".join(f"{name}={value}" for name, value in self.cookies.items())
        headers = {"Host": HOST, "X-Forwarded-Proto": "https", "Cookie": cookie}
        url = self.site.servers[process].url + path
        request = urllib.request.Request(url, headers=headers)  # noqa: S310 (our own URL)
        with urllib.request.urlopen(request, timeout=60) as answer:  # noqa: S310
            return json.loads(answer.read())


@dataclass
class Worker:
    process: subprocess.Popen[bytes]
    log_path: Path

    def stop(self) -> None:
        terminate_all([self.process], 5)


@contextmanager
def shipped_site(
    topology: Topology,
    workdir: Path,
    processes: int = 1,
    before: Callable[[Redis], object] | None = None,
    **settings: str,
) -> Iterator[ShippedSite]:
    """The topology started (``before`` writes what it holds before the site
    starts), the site on it as shipped; both stopped after."""
    topology.start()
    site = ShippedSite(topology, workdir, processes, settings)
    try:
        if isinstance(topology, Several):
            site.settings.setdefault("ECHOMQ_CONNECTIONS", topology.connections_setting())
        if before is not None:
            client = site.redis()
            before(client)
            client.close()
        site.start()
        yield site
    finally:
        site.stop()
        topology.stop()


def log_in(browser: Browser, site: ShippedSite, state_path: Path) -> str:
    """Through the login form, over TLS; the browser state the tests' pages start from."""
    context = browser.new_context(ignore_https_errors=True)
    page = context.new_page()
    page.goto(site.url + "/login/")
    page.fill("#id_username", USERNAME)
    page.fill("#id_password", PASSWORD)
    page.click("button[type=submit]")
    page.wait_for_url(site.url + "/")
    context.storage_state(path=str(state_path))
    context.close()
    return str(state_path)


def wait_until(predicate: Callable[[], object], timeout: float, what: str) -> float:
    """Seconds until ``predicate()`` holds; fails naming ``what`` after ``timeout``."""
    began = time.monotonic()
    while not predicate():
        if time.monotonic() - began > timeout:
            raise AssertionError(f"not within {timeout} s: {what}")
        time.sleep(0.1)
    return time.monotonic() - began


# -- what every topology must show -----------------------------------------------------


def wait_live(page: Page) -> None:
    expect(page.locator("html")).to_have_attribute("data-live", "open", timeout=15_000)


def metric(text: str, name: str, ref: QueueRef) -> float | None:
    """The value of sample ``name`` for the queue in a /metrics answer (None: absent)."""
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            labels = sample.labels
            if sample.name == name and (labels.get("prefix"), labels.get("queue")) == (
                ref.prefix,
                ref.name,
            ):
                return float(sample.value)
    return None


def on_call_walk(page: Page, site: ShippedSite, ref: QueueRef) -> None:
    """What an engineer on call does, on the site as shipped: jobs processed by
    a worker (half fail, tests/e2e/cohort_worker.py); the overview lists the
    queue with its counts and follows a new job live; the queue page's failed
    tab lists the failures with their reasons; a failed job's page shows its
    reason; /metrics has the collector's history of the queue (its completed
    and failed counts, its lag); a Retry on the job's page moves the job,
    which the page shows live."""
    client = site.redis()
    queue = Queue(ref.name, client, prefix=ref.prefix)
    worker = site.worker(ref.name, ref.prefix)
    try:
        ids = [queue.add("send-receipt", {"n": n, "to": f"user{n}@example.com"}) for n in range(8)]
        wait_until(
            lambda: queue.get_counts("completed", "failed") == {"completed": 4, "failed": 4},
            20,
            "the worker processed 8 jobs",
        )

        # The overview: the queue's row, live.
        page.goto("/")
        wait_live(page)
        row = page.locator(f'tr[data-queue="{ref.qualified}"]')
        # A queue that appeared after the site started joins the overview once
        # discovery sees it (its worker's connection: within about 10 s), live.
        expect(row.locator('[data-count-state="failed"]')).to_have_text("4", timeout=20_000)
        page.evaluate("window.__noReload = true")
        queue.add("send-receipt", {"n": 2, "to": "late@example.com"})  # completes
        expect(row.locator('[data-count-state="completed"]')).to_have_text("5", timeout=10_000)
        assert page.evaluate("window.__noReload === true"), "the overview was reloaded"

        # The queue page's failed tab, reached as a user does.
        row.locator("a").first.click()
        wait_live(page)
        page.locator(".tabs a.state-failed").click()
        failed_rows = page.locator("#job-table tr[data-job-id]")
        expect(failed_rows).to_have_count(4)
        expect(page.locator("#job-table")).to_contain_text("card declined")
        expect(page.locator("#job-table")).to_contain_text("timeout after")

        # The history collector's figures, as Prometheus reads them.
        def recorded() -> bool:
            text = site.metrics()
            return (
                metric(text, "echomq_queue_completed_total", ref) == 5
                and metric(text, "echomq_queue_failed_total", ref) == 4
            )

        wait_until(recorded, 20, f"/metrics has the collector's counts:\n{site.metrics()}")
        assert re.search(r"^echomq_collector_lag_seconds\{.*\} \d", site.metrics(), re.M)
        worker.stop()

        # A failed job's page, and a retry there.
        declined = ids[1]
        page.locator(f'#job-table tr[data-job-id="{declined}"] a').first.click()
        wait_live(page)
        expect(page.locator("[data-job-state]")).to_have_attribute("data-job-state", "failed")
        expect(page.locator("main")).to_contain_text("card declined")
        page.get_by_role("button", name="Retry").click()
        expect(page.locator("#messages")).to_contain_text(declined)
        expect(page.locator("[data-job-state]")).to_have_attribute("data-job-state", "wait")
        assert queue.get_state(declined) == "wait"
    finally:
        worker.stop()
        client.close()
