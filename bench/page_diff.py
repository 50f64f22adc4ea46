"""Every page kind and every GET /api/ answer of two trees, on the same data, diffed.

    python bench/page_diff.py main HEAD              # two git refs (or tree paths)
    python bench/page_diff.py main ../wt/rooms --out build/page_diff --keep

Issue 25 asks that a structural change leave what a person sees byte-identical
and the API's answers equal. This starts one private redis-server, seeds it
once with fixed data (fixed ids, and fixed timestamps except where a page only
shows the last hour or day: the history, metrics, cohorts and audit rows are
written relative to the run's minute), then serves it from each tree's own
code (a git ref is checked out with ``git worktree add --detach``; a path is
used as it is), each a uvicorn process of its ``dashboard.asgi`` with its own
SQLite database, signed in as one user. Each URL is fetched from the trees
one right after the other, so the clock moves by milliseconds between them;
what still depends on the clock or the session (CSRF tokens, "3 min ago",
running times, ages in the JSON, hashed static names) is normalised. One file
per answer goes to ``<out>/<label>/`` (its status line, then the body), and
the tool prints a unified diff of each pair that differs: nothing when the
trees answer alike. A pair that differs is fetched again once (a minute may
have begun between two fetches). Exit status 1 when something differs.

The GET paths come from the OpenAPI document of the first tree: a path the
tool has no filled-in URL for fails the run, so a new endpoint cannot be
skipped silently.
"""

from __future__ import annotations

import argparse
import difflib
import importlib.util
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import bullboard_peer  # noqa: E402  (bench/, on the path as the script's folder)

from queues.collector import MINUTE_MS, MinuteBatch, record  # noqa: E402
from queues.connection import connect  # noqa: E402
from queues.read.cohorts import build_cohort  # noqa: E402
from queues.read.refs import QueueRef  # noqa: E402
from queues.read.states import TABS  # noqa: E402
from queues.redis_server import LocalRedisServer, server_binary  # noqa: E402
from queues.schedulers import JobSchedulers, Repeat  # noqa: E402
from tests.dashboard_seed import seed_job, seed_metrics  # noqa: E402
from tests.e2e.server import free_port  # noqa: E402

# bench/dashboard.py's signed-in HTTP session (its name is the app's package's).
_spec = importlib.util.spec_from_file_location("bench_dashboard", ROOT / "bench" / "dashboard.py")
assert _spec is not None
assert _spec.loader is not None
_bench = importlib.util.module_from_spec(_spec)
sys.modules[_spec.name] = _bench  # dataclasses look their module up
_spec.loader.exec_module(_bench)
Session = _bench.Session

# The data's clock: 2026-11-30 09:00:00 UTC (what needs "now" uses the run's minute).
T0 = 1_796_029_200_000
EMAILS, PAYMENTS, ODD = (
    QueueRef("bull", "emails"),
    QueueRef("bull", "payments"),
    QueueRef("bull", "odd"),
)
FLOWS, PARTS = QueueRef("bull", "flows"), QueueRef("bull", "flow-parts")
USER, PASSWORD = "oncall", "page-diff-password-1"
COHORT, GROUP = "cohort", "group"  # the cohort's id ("<minute>-0000c0de"), the first error group's
# Real failures, as Node and Python workers report them.
REASONS = {
    "f1": "connect ECONNREFUSED 127.0.0.1:5432",
    "f2": "connect ECONNREFUSED 127.0.0.1:5432",
    "f3": "TypeError: Cannot read properties of undefined (reading 'email')",
    "f4": "Request failed with status code 429",
}


def seed(client: Any, now: int) -> dict[str, str]:
    """The scene every tree serves; returns the ids the URLs need."""
    client.flushall()
    keys = EMAILS.keys
    at = {"timestamp": T0 - 60_000, "processedOn": T0 - 50_000, "finishedOn": T0 - 40_000}
    seed_job(client, keys, "w1", data={"to": "ana@example.com"}, fields={"timestamp": T0})
    seed_job(client, keys, "raw", fields={"data": "not json", "opts": "{not json", "timestamp": T0})
    seed_job(client, keys, "p1", state="prioritized", opts={"priority": 5}, fields=at, score=5)
    seed_job(client, keys, "d1", state="delayed", fields=at, score=(T0 + 3_600_000) * 4096)
    seed_job(client, keys, "a1", state="active", fields={**at, "progress": '{"step":1,"of":4}'})
    client.set(keys.lock("a1"), "worker-token")
    seed_job(client, keys, "c1", state="completed", fields=at, score=T0 - 40_000)
    for n, (job_id, reason) in enumerate(REASONS.items()):
        stack = json.dumps([f"Error: {reason}\n    at send (mailer.js:{40 + n}:9)"])
        fields = {**at, "failedReason": reason, "stacktrace": stack, "atm": 3, "ats": 3}
        seed_job(client, keys, job_id, state="failed", opts={"attempts": 3}, fields=fields,
                 score=T0 - 40_000 + n)  # fmt: skip
    client.rpush(keys.logs("f1"), "connecting to db", "retrying in 2 s")
    for n, (name, fields) in enumerate(
        [("added", {"jobId": "w1", "name": "task"}), ("failed", {"jobId": "f1",
         "failedReason": REASONS["f1"]}), ("completed", {"jobId": "c1"}), ("drained", {})]
    ):  # fmt: skip
        client.xadd(keys.events, {"event": name, **fields}, id=f"{T0 + n}-0")
    seed_metrics(client, keys, [3, 5, 4, 6], [0, 1, 0, 2], now)
    record_history(client, EMAILS, now)
    for scheduler, repeat in (
        ("nightly", Repeat(pattern="0 3 * * *", tz="UTC")),
        ("beat", Repeat(every_ms=60_000, limit=5)),
    ):
        JobSchedulers(EMAILS.name, client).upsert(scheduler, repeat, name="report", data={})
    cohort_id = f"{now - 120_000:013d}-0000c0de"
    cohort = build_cohort(cohort_id, action="retry", source="failed", user=USER,
                          at_ms=now - 120_000, count=2, ids=["f1", "f2"],
                          previous_reasons={"f1": REASONS["f1"], "f2": REASONS["f2"]},
                          audit_id=None)  # fmt: skip
    client.set(keys.cohort(cohort_id), cohort.encode())
    client.zadd(keys.cohort_index(), {cohort_id: now - 120_000})
    # A paused queue, a job id with a '/', a flow across two queues.
    seed_job(client, PAYMENTS.keys, "charge-1", state="paused", fields={"timestamp": T0})
    client.hset(PAYMENTS.keys.meta, "paused", 1)
    seed_job(client, ODD.keys, "batch/7", fields={"timestamp": T0})
    seed_job(client, FLOWS.keys, "parent", state="waiting-children", name="fan-out",
             fields={"timestamp": T0})  # fmt: skip
    for n in range(3):
        child = PARTS.keys.job(f"part-{n}")
        seed_job(client, PARTS.keys, f"part-{n}", name="part",
                 fields={"timestamp": T0, "parentKey": FLOWS.keys.job("parent")})  # fmt: skip
        client.sadd(FLOWS.keys.dependencies("parent"), child)
    return {COHORT: cohort_id}


def record_history(client: Any, ref: QueueRef, now: int, minutes: int = 31) -> None:
    """The last ``minutes`` minutes as the collector records them."""
    cursor = ""
    current = now // MINUTE_MS
    for n, minute in enumerate(range(current - minutes + 1, current + 1)):
        batch = MinuteBatch(minute, f"{minute * MINUTE_MS}-0")
        batch.add.update({"c": n % 7 + 1, "f": int(n % 3 == 0)})
        batch.duration("w", 30 + n)
        batch.duration("r", 200 + 10 * n)
        record(client, ref, cursor, batch)
        cursor = batch.last_id


def page_urls(ids: dict[str, str]) -> dict[str, str]:
    """name -> path of every page kind (file names: the name)."""
    q = "/queues/bull/emails/"
    urls = {"overview": "/", "login": "/login/", "not-found": "/queues/bull/no-such-queue/"}
    urls |= {f"queue-{tab.name}": f"{q}?state={tab.name}" for tab in TABS}
    urls |= {f"job-{job}": f"{q}job/{job}" for job in ("w1", "raw", "a1", "d1", "c1", "f1", "gone")}
    return urls | {
        "queue-paused": "/queues/bull/payments/?state=wait",
        "job-odd": "/queues/bull/odd/job/batch/7",
        "flow-parent": "/queues/bull/flows/job/parent",
        "flow-children": "/queues/bull/flows/flow-children/parent",
        "flow-child": "/queues/bull/flow-parts/job/part-1",
        "error-groups": f"{q}errors/",
        "error-group": f"{q}errors/?group={ids[GROUP]}",
        "error-group-older": f"{q}errors/?group={ids[GROUP]}&size=1&page=2",
        "recent-actions": f"{q}cohorts/",
        "cohort": f"{q}cohorts/{ids[COHORT]}/",
        "workers": f"{q}workers/",
        "schedulers": f"{q}schedulers/",
        "search": f"{q}search/?q=reason%20~%20ECONNREFUSED",
        "search-bad": f"{q}search/?q=ECONNREFUSED",
        "search-empty": f"{q}search/",
        "events": f"{q}events/",
        "history-last-hour": "/history/last-hour/",
        "history": f"{q}history/",
        "history-day": f"{q}history/?range=24h",
        "live-over-http": "/ws/live/",
        "metrics": "/metrics",
    }


# Pages fetched again as htmx asks for them (the fragment a live refresh swaps in).
HTMX = ("overview", "queue-failed", "queue-wait", "job-f1", "job-a1", "workers", "schedulers",
        "error-groups", "error-group", "recent-actions", "events", "flow-parent")  # fmt: skip


def api_urls(document: dict[str, Any], ids: dict[str, str]) -> dict[str, str]:
    """name -> path of every GET in the OpenAPI document, its parameters filled
    in (the name: the path's words, e.g. ``api-queue-jobs``)."""
    fill = {"prefix": "bull", "name": "emails", "job_id": "f1", "cohort_id": ids[COHORT],
            "group": ids[GROUP]}  # fmt: skip
    queue = "/queues/{prefix}/{name}/"
    queries = {  # more than one answer where the answers branch
        queue + "jobs/": [f"?state={tab.name}" for tab in TABS] + ["?state=bogus"],
        queue + "events/": ["", "?type=failed", "?job=w1", "?count=2"],
        queue + "job/{job_id}": ["", "?logs_start=1&logs_size=1", "?full=1"],
        queue + "flow/{job_id}": [""],
        queue + "search/": ["?q=reason ~ ECONNREFUSED", "?q=data.to = ana@example.com&state=wait",
                            "?q=ECONNREFUSED"],
        queue + "cohorts/{cohort_id}/": ["", "?part=failed", "?part=wait"],
        queue + "errors/{group}/jobs/": ["", "?start=1"],
    }  # fmt: skip
    root = document["servers"][0]["url"].rstrip("/")
    urls: dict[str, str] = {}
    for path, operations in sorted(document["paths"].items()):
        if "get" not in operations:
            continue
        missing = set(re.findall(r"\{(\w+)\}", path)) - set(fill)
        if missing:
            raise SystemExit(f"page_diff: no value for {missing} of GET {path}")
        filled = root + re.sub(r"\{(\w+)\}", lambda m: fill[m.group(1)], path)
        words = re.sub(r"\{\w+\}|/queues/\{prefix\}/\{name\}", "", path).replace("/", " ").split()
        label = "api-" + ("-".join(words) if path.startswith(queue) else "-".join(words) or "root")
        if path.startswith(queue):
            label = "api-queue" + "".join(f"-{word}" for word in words)
        for n, query in enumerate(queries.get(path, [""])):
            urls[label + (f"-{n}" if n else "")] = filled + query.replace(" ", "%20")
    return urls


# What depends on the clock or the session, and what it is replaced by.
NORMALISE = [
    (re.compile(rb'(name="csrfmiddlewaretoken" value=")[^"]+'), rb"\1<csrf>"),
    (re.compile(rb'("csrf[A-Za-z_]*"\s*:\s*")[^"]+'), rb"\1<csrf>"),
    (re.compile(rb"\b\d+(?:\.\d)? (?:ms|s|min|h|d|years) ago\b"), rb"<ago>"),
    (re.compile(rb"\bin \d+(?:\.\d)? (?:ms|s|min|h|d|years)\b"), rb"in <span>"),
    (re.compile(rb"\brunning \d+(?:\.\d)? (?:s|min|h|d|years)\b"), rb"running <span>"),
    (re.compile(rb'(data-running-ms=")\d+'), rb"\1<ms>"),
    (re.compile(rb"(/static/[\w/.-]+?)\.[0-9a-f]{12}(\.\w+)"), rb"\1\2"),
]


# JSON fields that hold the clock or a random id: their values are replaced.
CLOCK_FIELDS = {"read_at", "search"}


def normalise(body: bytes, sort_keys: bool = False) -> bytes:
    """``body`` without what depends on the clock or the session; a JSON body
    printed one field a line (so that a diff says which field differs)."""
    for pattern, replacement in NORMALISE:
        body = pattern.sub(replacement, body)
    if body[:1] in (b"{", b"["):
        try:
            answer = json.loads(body)
        except ValueError:
            return body
        printed = json.dumps(
            _without_clock(answer), indent=1, ensure_ascii=False, sort_keys=sort_keys
        )
        return printed.encode()
    return body


def _without_clock(value: Any) -> Any:
    if isinstance(value, dict):
        return {
            key: f"<{key}>" if key in CLOCK_FIELDS and value else _without_clock(item)
            for key, item in value.items()
        }
    if isinstance(value, list):
        return [_without_clock(item) for item in value]
    return value


@dataclass
class Tree:
    label: str
    path: Path
    port: int
    session: Session


def rev_parse(ref: str) -> str:
    return subprocess.run(["git", "rev-parse", "--verify", ref + "^{commit}"], cwd=ROOT,
                          check=True, capture_output=True, text=True).stdout.strip()  # fmt: skip


def checkout(spec: str, target: Path, stack: ExitStack) -> Path:
    """A tree path as it is, or a git ref checked out at ``target``."""
    if Path(spec).is_dir():
        return Path(spec).resolve()
    subprocess.run(["git", "worktree", "add", "--detach", "-q", str(target), spec],
                   cwd=ROOT, check=True)  # fmt: skip
    stack.callback(subprocess.run, ["git", "worktree", "remove", "--force", str(target)],
                   cwd=ROOT, check=False)  # fmt: skip
    return target


SETUP = """
import datetime as dt
from django.contrib.auth.models import Permission, User
from dashboard.models import AuditEntry
user = User.objects.create_user({user!r}, password={password!r}, is_staff=True)
user.user_permissions.add(*Permission.objects.filter(content_type__app_label="dashboard"))
at = dt.datetime.fromtimestamp({at} / 1000, tz=dt.UTC)
AuditEntry.objects.create(at=at, user={user!r}, action="retry", queue="bull:emails",
    jobs="f1 f2", count=2, result="2 failed jobs moved back to waiting")
AuditEntry.objects.create(at=at, user={user!r}, action="edit", queue="bull:emails",
    jobs="w1", count=1, result="Job w1's data saved", job="w1",
    diff="--- before\\n+++ after\\n-{{}}\\n+{{\\"to\\": \\"ana@example.com\\"}}\\n")
"""


@contextmanager
def serve(label: str, path: Path, redis_url: str, workdir: Path, now: int) -> Iterator[Tree]:
    """``path``'s dashboard on ``redis_url``, its own database, signed in."""
    python = path / ".venv/bin/python"
    python_cmd = str(python) if python.exists() else sys.executable
    env = {
        **os.environ,
        "PYTHONPATH": str(path),
        "DJANGO_SETTINGS_MODULE": "dashboard.settings",
        "REDIS_URL": redis_url,
        "ECHOMQ_DB": str(workdir / f"{label}.sqlite3"),
        "SECRET_KEY": "page-diff-secret-key-not-for-production",
        "DEBUG": "0",
        "LOG_LEVEL": "ERROR",
        # The shared Redis must hold only the seeded history.
        "ECHOMQ_HISTORY_COLLECTOR": "0",
    }
    script = SETUP.format(user=USER, password=PASSWORD, at=now - 120_000)
    for command in (["migrate", "--verbosity", "0"], ["shell", "--verbosity", "0", "-c", script]):
        subprocess.run([python_cmd, "manage.py", *command], cwd=path, env=env, check=True)
    port = free_port()
    server = subprocess.Popen(
        [python_cmd, "-m", "uvicorn", "dashboard.asgi:application", "--host", "127.0.0.1",
         "--port", str(port), "--log-level", "warning", "--no-access-log", "--lifespan", "off"],
        cwd=path, env=env,
    )  # fmt: skip
    try:
        bullboard_peer.listening(server, port, "uvicorn")
        session = Session(port)
        session.login(USER, PASSWORD)
        yield Tree(label, path, port, session)
    finally:
        server.terminate()
        server.wait(10)


def fetch(tree: Tree, name: str, path: str, sort_keys: bool = False) -> bytes:
    """One answer, normalised, after a line saying its status and path; the
    login page and static files as a stranger asks for them."""
    anonymous = name == "login" or name.startswith("static")
    session = Session(tree.port) if anonymous else tree.session
    headers = {"HX-Request": "true"} if name.endswith("-htmx") else {}
    status, body = session.request("GET", path, **headers)
    return b"%d GET %s\n" % (status, path.encode()) + normalise(body, sort_keys)


def run(specs: list[str], out: Path, keep: bool, sort_keys: bool = False) -> int:
    with ExitStack() as stack, tempfile.TemporaryDirectory(prefix="page_diff_") as scratch:
        redis = LocalRedisServer(server_binary()[0]).start()
        stack.callback(redis.stop)
        client = connect(redis.url)
        now = int(time.time() * 1000) // MINUTE_MS * MINUTE_MS
        ids = seed(client, now)
        # A worker of emails, as BullMQ names its connection.
        worker = connect(redis.url)
        worker.client_setname("bull:ZW1haWxz:w:mailer-1")
        labels = [re.sub(r"\W", "_", spec.rstrip("/").rsplit("/", 1)[-1]) for spec in specs]
        if len(set(labels)) < len(labels):
            labels = [f"{n}-{label}" for n, label in enumerate(labels)]
        # Each ref read once, first: a branch that moves during the run is read as it was.
        specs = [spec if Path(spec).is_dir() else rev_parse(spec) for spec in specs]
        trees = []
        for spec, label in zip(specs, labels, strict=True):
            tree = checkout(spec, Path(scratch) / label, stack)
            trees.append(stack.enter_context(serve(label, tree, redis.url, Path(scratch), now)))
        _, schema = trees[0].session.request("GET", "/api/schema/")
        _, groups = trees[0].session.request("GET", "/api/queues/bull/emails/errors/")
        ids[GROUP] = json.loads(groups)["groups"][0]["key"]
        pages = page_urls(ids)
        urls = pages | {f"{name}-htmx": pages[name] for name in HTMX}
        urls |= api_urls(json.loads(schema), ids)
        answers: dict[str, list[bytes]] = {}
        again = 0
        for name, path in urls.items():
            answers[name] = [fetch(tree, name, path, sort_keys) for tree in trees]
            if len(set(answers[name])) > 1:  # once more: a minute may have begun
                again += 1
                answers[name] = [fetch(tree, name, path, sort_keys) for tree in trees]
        static = sorted({m.decode() for a in answers.values() for m in
                         re.findall(rb'(?:href|src)="(/static/[^"?#]+)"', a[0])})  # fmt: skip
        for path in static:
            name = "static" + path.removeprefix("/static").replace("/", "-")
            answers[name] = [fetch(tree, name, path, sort_keys) for tree in trees]
        differ = 0
        for n, tree in enumerate(trees):
            folder = out / tree.label
            shutil.rmtree(folder, ignore_errors=True)
            folder.mkdir(parents=True)
            for name, bodies in answers.items():
                (folder / name).write_bytes(bodies[n])
        for name, bodies in answers.items():
            for tree, body in zip(trees[1:], bodies[1:], strict=True):
                if body != bodies[0]:
                    differ += 1
                    sys.stdout.writelines(difflib.unified_diff(
                        bodies[0].decode(errors="replace").splitlines(keepends=True),
                        body.decode(errors="replace").splitlines(keepends=True),
                        f"{trees[0].label}/{name}", f"{tree.label}/{name}", n=2))  # fmt: skip
        summary = f"{len(urls)} pages and API answers, {len(static)} static files"
        print(f"page_diff: {summary} per tree, {differ} differ ({again} fetched twice); "
              f"dumps in {out}", file=sys.stderr)  # fmt: skip
        if keep:
            input(f"servers on ports {[t.port for t in trees]}, Redis {redis.url}: Enter to stop")
        return int(differ > 0)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("trees", nargs="+", help="git refs or tree paths (the first is the base)")
    parser.add_argument("--out", type=Path, default=ROOT / "build" / "page_diff")
    parser.add_argument("--keep", action="store_true", help="keep the servers up until Enter")
    parser.add_argument(
        "--sort-keys", action="store_true", help="compare JSON objects whatever their keys' order"
    )
    args = parser.parse_args()
    sys.exit(run(args.trees, args.out, args.keep, args.sort_keys))


if __name__ == "__main__":
    main()
