"""Dashboard latency over HTTP against the real ASGI server, at growing N.

    python bench/dashboard.py [--sizes 1000,100000,1000000] [--requests 300]
                              [--many-queues 1000] [--no-peer]
                              [--app dashboard.asgi:application]
                              [--only flow,schedulers] [--without-metrics]

20 queues (a few jobs each) plus one queue ``big`` whose failed set holds N
jobs, seeded straight into Redis. Each N gets its own private redis-server and
its own dashboard (uvicorn subprocess, the real ASGI app); requests to the N
servers are interleaved in rounds so load from anything else on the machine
hits every N alike. It prints p50 / p95 (ms) of the overview page and its
JSON, the failed list page (50 rows) and its JSON, a job page, the page
and flow JSON of a flow parent with 1,000 children in another queue, and the
schedulers tab (50 rows) and its JSON on a queue ``crons`` holding min(N,
10,000) job schedulers, with the largest / smallest N p50 ratio, next to the
server floor (an anonymous API call). Side by side, bull-board 9.10 (npm, in
a scratch folder: bench/bullboard_peer.py) on the same Redis answers the same
two questions (the overview's JSON, 50 failed jobs' JSON), timed in
alternating rounds with ours; where Node is missing the bench says so and
prints ours alone. ``--many-queues`` (1,000) times the overview page (and
its size) and JSON at that many queues, next to bull-board's overview JSON.
``--app`` serves another ASGI
application instead (bench/http_bridges.py has the HTTP bridges
dashboard.site.http was measured against). Finally it times retry-all of 100k
failed jobs through the JSON API and the server process's RSS growth
(bench/retry_all.py times it beside bull-board's).
``--only`` (words of the endpoints' labels, comma-separated) times those
endpoints alone, beside the server floor, and skips retry-all: a small run
for one page on a shared machine. ``--without-metrics`` seeds the
``--many-queues`` queues as BullMQ's workers leave them by default, with no
metrics, and writes their last 31 minutes into the dashboard's history as a
current collector does (queues.collector.record, minute by minute): the
overview then draws their lines from that history.

Targets: every page flat in N (1M/1k p50 ratio <= 1.3); JSON overview <= 5 ms
and failed-page JSON <= 8 ms p50; HTML pages <= 20 ms p50 (the flow page and
the schedulers tab at 10,000 schedulers included); ours / bull-board <= 0.5 for
both JSON answers; at 1,000 queues the overview page <= 40 ms and <= 300 KB;
retry-all 100k <= 3 s with < 30 MB RSS growth.
"""

from __future__ import annotations

import argparse
import http.client
import json
import os
import re
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import bullboard_peer  # noqa: E402  (bench/, on the path as the script's folder)

from queues.collector import MINUTE_MS, MinuteBatch, record  # noqa: E402
from queues.connection import connect  # noqa: E402
from queues.read.refs import QueueRef  # noqa: E402
from queues.redis_server import LocalRedisServer, server_binary  # noqa: E402
from tests.dashboard_seed import seed_failed_bulk, seed_job, seed_schedulers  # noqa: E402

SMALL_QUEUES = 20
BIG = QueueRef("bull", "big")
# A flow parent whose 1,000 children sit in another queue (issue 12: its page
# reads one page of children, whatever their number).
FLOWS, FLOW_ITEMS = QueueRef("bull", "flows"), QueueRef("bull", "flow-items")
FLOW_CHILDREN = 1_000
CRONS = QueueRef("bull", "crons")
MOST_SCHEDULERS = 10_000
RETRY_ALL_SIZE = 100_000
# The overview at many queues (issue 12: a page of rows, whatever their number).
MANY_QUEUES = 1_000


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def rss_mb(pid: int) -> float:
    status = Path(f"/proc/{pid}/status").read_text()
    match = re.search(r"VmRSS:\s+(\d+) kB", status)
    return int(match.group(1)) / 1024 if match else 0.0


class Session:
    """One keep-alive HTTP connection with the dashboard's cookies."""

    def __init__(self, port: int) -> None:
        self.port = port
        self.conn = http.client.HTTPConnection("127.0.0.1", port, timeout=120)
        self.cookies: dict[str, str] = {}

    def request(self, method: str, path: str, body: str | None = None, **headers: str) -> Any:
        headers = {"Cookie": "; ".join(f"{k}={v}" for k, v in self.cookies.items()), **headers}
        try:
            self.conn.request(method, path, body=body, headers=headers)
            response = self.conn.getresponse()
        except (http.client.RemoteDisconnected, ConnectionResetError, BrokenPipeError):
            # A keep-alive connection the server closed while idle (the peer's
            # slow answers can outlast our server's keep-alive): once more.
            self.conn.close()
            self.conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=120)
            self.conn.request(method, path, body=body, headers=headers)
            response = self.conn.getresponse()
        data = response.read()
        for header in response.headers.get_all("Set-Cookie") or []:
            name, _, rest = header.partition("=")
            self.cookies[name.strip()] = rest.split(";", 1)[0]
        return response.status, data

    def login(self, username: str, password: str) -> None:
        _, page = self.request("GET", "/login/")
        token = re.search(rb'name="csrfmiddlewaretoken" value="([^"]+)"', page)
        assert token, "no CSRF token on the login page"
        fields = {"username": username, "password": password}
        form = urlencode({"csrfmiddlewaretoken": token.group(1).decode(), **fields})
        status, _ = self.request(
            "POST", "/login/", form, **{"Content-Type": "application/x-www-form-urlencoded"}
        )
        assert status == 302, f"login failed ({status})"

    def post_json(self, path: str, body: dict[str, Any]) -> tuple[int, Any]:
        status, data = self.request(
            "POST",
            path,
            json.dumps(body),
            **{"Content-Type": "application/json", "X-CSRFToken": self.cookies["csrftoken"]},
        )
        return status, json.loads(data)


def sample(session: Session, path: str, count: int, expect: int = 200) -> list[float]:
    """Latencies (ms) of ``count`` GETs on one keep-alive connection."""
    samples = []
    for _ in range(count):
        start = time.perf_counter()
        status, _ = session.request("GET", path)
        samples.append((time.perf_counter() - start) * 1000)
        assert status == expect, (path, status)
    return samples


def p50_p95(samples: list[float]) -> tuple[float, float]:
    ordered = sorted(samples)
    return statistics.median(ordered), ordered[max(0, int(len(ordered) * 0.95) - 1)]


def seed(client: Any, failed: int) -> None:
    client.flushall()
    seed_small_queues(client, SMALL_QUEUES, jobs_per_state=5)
    seed_failed_bulk(client, BIG.keys, failed)
    seed_flow(client, FLOW_CHILDREN)
    seed_schedulers(client, CRONS.keys, min(failed, MOST_SCHEDULERS))


def small_queue_names(count: int) -> list[str]:
    return [f"queue-{q:04d}" for q in range(count)]


def seed_small_queues(
    client: Any, count: int, *, jobs_per_state: int, metrics: bool = True
) -> None:
    """``count`` queues with a few jobs in four states and half an hour of
    metrics, or (``metrics`` False) of the dashboard's history instead."""
    for name in small_queue_names(count):
        keys = QueueRef("bull", name).keys
        for state in ("wait", "delayed", "completed", "failed"):
            for n in range(jobs_per_state):
                seed_job(client, keys, f"{state}-{n}", state=state)
        if metrics:
            client.lpush(keys.metrics_data("completed"), *range(30))
        else:
            seed_history(client, QueueRef("bull", name))


def seed_history(client: Any, ref: QueueRef, minutes: int = 31) -> None:
    """The last ``minutes`` minutes of ``ref`` (the current one included) as the
    collector records them: one batch a minute, 1 to ``minutes`` completed and
    a failure every third minute, through the collector's own script."""
    now = int(time.time() * 1000) // MINUTE_MS
    cursor = ""
    for n, minute in enumerate(range(now - minutes + 1, now + 1)):
        batch = MinuteBatch(minute, f"{minute * MINUTE_MS}-0")
        batch.add.update({"c": n + 1, "f": int(n % 3 == 0)})
        record(client, ref, cursor, batch)
        cursor = batch.last_id


def seeded_queue_names() -> list[str]:
    """Every queue seed() writes: bull-board shows only the queues it is given."""
    return [*small_queue_names(SMALL_QUEUES), BIG.name, FLOWS.name, FLOW_ITEMS.name, CRONS.name]


def seed_flow(client: Any, children: int) -> None:
    """The parent ``flows`` #parent, waiting for ``children`` jobs of ``flow-items``."""
    parent = FLOWS.keys
    seed_job(client, parent, "parent", state="waiting-children", name="fan-out")
    pipe = client.pipeline(transaction=False)
    for n in range(children):
        child = FLOW_ITEMS.keys.job(f"child-{n}")
        pipe.hset(
            child, mapping={"name": "part", "timestamp": 1, "parentKey": parent.job("parent")}
        )
        pipe.lpush(FLOW_ITEMS.keys.wait, f"child-{n}")
        pipe.sadd(parent.dependencies("parent"), child)
    pipe.execute()


def start_server(env: dict[str, str], port: int, app: str) -> subprocess.Popen[bytes]:
    server = subprocess.Popen(
        [
            sys.executable, "-m", "uvicorn", app,
            "--host", "127.0.0.1", "--port", str(port),
            "--log-level", "warning", "--no-access-log", "--lifespan", "off",
            "--timeout-keep-alive", "120",
        ],
        cwd=ROOT,
        env=env,
    )  # fmt: skip
    return bullboard_peer.listening(server, port, "uvicorn")


def prepare_django(env: dict[str, str]) -> None:
    """Tables and a user who may view and act, in the server's database (the
    parts of one run share it: the user is made once)."""
    script = (
        "from django.contrib.auth.models import User, Permission;"
        "u = User.objects.filter(username='bench').first()"
        " or User.objects.create_user('bench', password='bench-pass', is_staff=True);"
        "u.user_permissions.add(*Permission.objects.filter(content_type__app_label='dashboard'))"
    )
    for command in (["migrate", "--verbosity", "0"], ["shell", "-c", script]):
        subprocess.run([sys.executable, "manage.py", *command], cwd=ROOT, env=env, check=True)


ENDPOINTS = [
    ("overview page", "/"),
    ("overview JSON", "/api/queues/"),
    ("failed page (50 rows)", "/queues/bull/big/?state=failed"),
    ("failed JSON (50 rows)", "/api/queues/bull/big/jobs/?state=failed&start=0&end=49"),
    ("job page", "/queues/bull/big/job/7"),
    (f"flow page ({FLOW_CHILDREN:,} kids)", "/queues/bull/flows/job/parent"),
    ("flow JSON", "/api/queues/bull/flows/flow/parent"),
    ("schedulers (50 rows)", "/queues/bull/crons/schedulers/"),
    ("schedulers JSON (50)", "/api/queues/bull/crons/schedulers/?start=0&end=49"),
]


@dataclass
class Stack:
    """One N: its own Redis, seeded, and its own dashboard server."""

    size: int
    redis: LocalRedisServer
    server: subprocess.Popen[bytes]
    port: int
    session: Session
    seconds_to_seed: float
    peer: subprocess.Popen[bytes] | None = None
    peer_port: int | None = None


def start_stack(
    size: int,
    workdir: Path,
    app: str,
    peer_folder: Path | None = None,
    *,
    many_queues: int = 0,
    metrics: bool = True,
) -> Stack:
    """Redis seeded for ``size`` (or ``many_queues`` small queues instead), our
    dashboard on it, and bull-board on the same Redis when ``peer_folder``."""
    redis = LocalRedisServer(server_binary()[0]).start()
    started = time.perf_counter()
    if many_queues:
        connect(redis.url).flushall()
        seed_small_queues(connect(redis.url), many_queues, jobs_per_state=2, metrics=metrics)
        names = small_queue_names(many_queues)
    else:
        seed(connect(redis.url), size)
        names = seeded_queue_names()
    seeded = time.perf_counter() - started
    env = {
        **os.environ,
        "REDIS_URL": redis.url,
        "ECHOMQ_DB": str(workdir / f"db-{size}.sqlite3"),
        "DEBUG": "0",
        "DJANGO_SETTINGS_MODULE": "dashboard.settings",
        # The server floor's 401s would each log a warning line: the bench
        # measures answering, not writing its terminal full.
        "LOG_LEVEL": "ERROR",
    }
    prepare_django(env)
    port = free_port()
    server = start_server(env, port, app)
    stack = Stack(size, redis, server, port, Session(port), seeded)
    try:
        stack.session.login("bench", "bench-pass")
        if peer_folder is not None:
            stack.peer_port = free_port()
            stack.peer = bullboard_peer.start(peer_folder, redis.url, names, stack.peer_port)
    except BaseException:
        stop_stack(stack)  # an app that cannot serve the login leaves nothing running
        raise
    return stack


def stop_stack(stack: Stack) -> None:
    for process in (stack.server, stack.peer):
        if process is not None:
            process.terminate()
            process.wait(10)
    stack.redis.stop()


# The questions asked of both dashboards: (label, ours, bull-board's).
PEER_ENDPOINTS = [
    ("overview JSON", "/api/queues/", bullboard_peer.OVERVIEW),
    (
        "failed JSON (50 rows)",
        "/api/queues/bull/big/jobs/?state=failed&start=0&end=49",
        bullboard_peer.failed_page(BIG.name),
    ),
]


def measure(
    stacks: list[Stack], requests: int, chosen: list[tuple[str, str]]
) -> dict[tuple[int, str], tuple[float, float]]:
    """Every chosen endpoint on every N, in interleaved rounds of 10 requests,
    so a machine shared with other work slows every N alike and ratios stay fair."""
    endpoints = [("(server floor)", "/api/queues/", 401)]
    endpoints += [(label, path, 200) for label, path in chosen]
    samples: dict[tuple[int, str], list[float]] = {}
    anonymous = {stack.size: Session(stack.port) for stack in stacks}
    for label, path, expect in endpoints:
        for stack in stacks:  # warm-up
            sample(anonymous[stack.size] if expect == 401 else stack.session, path, 20, expect)
        for _ in range(max(1, requests // 10)):
            for stack in stacks:
                session = anonymous[stack.size] if expect == 401 else stack.session
                samples.setdefault((stack.size, label), []).extend(
                    sample(session, path, 10, expect)
                )
    return {key: p50_p95(values) for key, values in samples.items()}


def measure_pair(
    stack: Stack, ours: str, theirs: str, requests: int, *, per_round: int = 10
) -> tuple[float, float]:
    """p50 of ours and of bull-board's, in alternating rounds of ``per_round``
    (each on a fresh keep-alive connection: an idle one may have been closed
    meanwhile)."""
    assert stack.peer_port is not None
    mine: list[float] = []
    peer: list[float] = []
    ours_session, peer_session = Session(stack.port), Session(stack.peer_port)
    ours_session.cookies = dict(stack.session.cookies)
    sample(ours_session, ours, per_round)
    sample(peer_session, theirs, per_round)
    for _ in range(max(1, requests // per_round)):
        mine += sample(ours_session, ours, per_round)
        peer += sample(peer_session, theirs, per_round)
    return p50_p95(mine)[0], p50_p95(peer)[0]


def many_queues(
    workdir: Path,
    app: str,
    peer_folder: Path | None,
    count: int,
    requests: int,
    *,
    metrics: bool = True,
) -> None:
    """The overview at ``count`` queues: its page (p50, bytes) and JSON, and
    bull-board's overview JSON over the same queues."""
    stack = start_stack(0, workdir, app, peer_folder, many_queues=count, metrics=metrics)
    try:
        time.sleep(2)  # discovery's first walk
        _, page = stack.session.request("GET", "/")
        _, listing = stack.session.request("GET", "/api/queues/")
        assert len(json.loads(listing)["queues"]) == count, "not every queue discovered"
        rounds = max(1, requests // 10)
        pages = p50_p95([t for _ in range(rounds) for t in sample(stack.session, "/", 10)])
        drawn = page.count(b'<svg class="sparkline"')
        print(
            f"\n{count:,} queues: overview page p50 {pages[0]:.1f} ms, p95 {pages[1]:.1f} ms,"
            f" {len(page) / 1024:.0f} KB, {drawn} rows drawn (target <= 40 ms, <= 300 KB)"
        )
        if stack.peer_port is None:
            alone = p50_p95(sample(stack.session, "/api/queues/", requests))[0]
            print(f"{count:,} queues: overview JSON p50 {alone:.1f} ms")
            return
        # bull-board asks every queue's workers (CLIENT LIST) per answer: at a
        # thousand queues each answer takes seconds, so few are timed.
        ours, theirs = measure_pair(stack, "/api/queues/", bullboard_peer.OVERVIEW, 5, per_round=1)
        print(
            f"{count:,} queues: overview JSON p50 ours {ours:.1f} ms, bull-board"
            f" {theirs:.1f} ms, ours / bull-board {ours / theirs:.2f}"
        )
    finally:
        stop_stack(stack)


def retry_all(workdir: Path, app: str) -> None:
    stack = start_stack(0, workdir, app)
    try:
        client = connect(stack.redis.url)
        seed_failed_bulk(client, BIG.keys, RETRY_ALL_SIZE)
        before = rss_mb(stack.server.pid)
        started = time.perf_counter()
        status, body = stack.session.post_json(
            "/api/queues/bull/big/bulk/", {"action": "retry_all"}
        )
        elapsed = time.perf_counter() - started
        after = rss_mb(stack.server.pid)
        assert status == 200, (status, body)
        assert body["count"] == RETRY_ALL_SIZE, body
        assert client.llen(BIG.keys.wait) == RETRY_ALL_SIZE
        print(
            f"\nretry-all {RETRY_ALL_SIZE:,} failed jobs over HTTP: {elapsed:.2f} s, "
            f"server RSS {before:.1f} -> {after:.1f} MB ({after - before:+.1f} MB)"
        )
    finally:
        stop_stack(stack)


def chosen_endpoints(only: str) -> list[tuple[str, str]]:
    """The endpoints whose label holds one of ``only``'s words (all when "")."""
    words = [word.strip() for word in only.split(",") if word.strip()]
    chosen = [
        (label, path) for label, path in ENDPOINTS if not words or any(w in label for w in words)
    ]
    if not chosen:
        raise SystemExit(f"--only {only!r} names no endpoint: {[label for label, _ in ENDPOINTS]}")
    return chosen


def by_size(
    sizes: list[int],
    workdir: Path,
    app: str,
    peer_folder: Path | None,
    requests: int,
    chosen: list[tuple[str, str]],
) -> None:
    """The endpoints at each N (and bull-board's answers beside ours): the table."""
    stacks: list[Stack] = []
    try:
        for size in sizes:
            stacks.append(start_stack(size, workdir, app, peer_folder))
            print(f"seeded N = {size:,} in {stacks[-1].seconds_to_seed:.1f} s")
        # Let each server's queue discovery settle before timing.
        time.sleep(2)
        results = measure(stacks, requests, chosen)
        pairs = {}
        for stack in stacks if peer_folder is not None else []:
            for label, ours, theirs in PEER_ENDPOINTS:
                mine, peer = measure_pair(stack, ours, theirs, requests)
                pairs[(stack.size, label)] = f"{mine:.1f}/{peer:.1f} = {mine / peer:.2f}"
    finally:
        for stack in stacks:
            stop_stack(stack)
    print("\nserver floor = an anonymous API call (401: no Redis, no database)")
    labels = ["(server floor)", *(label for label, _ in chosen)]
    header = "".join(f"{f'N={size:,}':>22}" for size in sizes)
    print(f"\n{'p50 / p95 ms':<24}{header}{'p50 ratio':>12}")
    for label in labels:
        cells = "".join(
            f"{results[(size, label)][0]:>12.2f}{results[(size, label)][1]:>10.2f}"
            for size in sizes
        )
        ratio = results[(sizes[-1], label)][0] / results[(sizes[0], label)][0]
        print(f"{label:<24}{cells}{ratio:>12.2f}")
    if peer_folder is not None:
        print(f"\n{'ours / bull-board p50':<24}{header}   (ms: ours / theirs; target <= 0.5)")
        for label, _, _ in PEER_ENDPOINTS:
            print(f"{label:<24}{''.join(f'{pairs[(size, label)]:>22}' for size in sizes)}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sizes", default="1000,100000,1000000")
    parser.add_argument("--requests", type=int, default=300)
    parser.add_argument("--app", default="dashboard.asgi:application")
    parser.add_argument("--many-queues", type=int, default=MANY_QUEUES, help="0: skip")
    parser.add_argument("--no-peer", action="store_true", help="do not run bull-board")
    parser.add_argument(
        "--without-metrics",
        action="store_true",
        help="many-queues: no worker metrics, the dashboard's history instead",
    )
    parser.add_argument(
        "--only", default="", help="label words, e.g. flow,schedulers: those pages, no retry-all"
    )
    args = parser.parse_args()
    chosen = chosen_endpoints(args.only)
    print(f"{args.app}; load average before: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    sizes = [int(s) for s in args.sizes.split(",") if s]  # "": the many-queue part alone
    workdir = Path(tempfile.mkdtemp(prefix="echomq-bench-"))
    peer_folder, why_not = (None, "--no-peer") if args.no_peer else bullboard_peer.prepare()
    print(f"peer: {'bull-board 9.10.1 (npm) on BullMQ 5' if peer_folder else why_not}")
    if sizes:
        by_size(sizes, workdir, args.app, peer_folder, args.requests, chosen)
    if args.many_queues:
        many_queues(
            workdir,
            args.app,
            peer_folder,
            args.many_queues,
            args.requests,
            metrics=not args.without_metrics,
        )
    if not args.only:
        retry_all(workdir, args.app)
    print(f"load average after: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")


if __name__ == "__main__":
    main()
