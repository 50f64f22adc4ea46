"""Retry-all of many failed jobs over HTTP: ours beside bull-board's, same Redis.

    python bench/retry_all.py [--jobs 100000] [--rounds 3] [--no-bullmq]
                              [--app dashboard.asgi:application]

One private redis-server, our dashboard (the real ASGI app, as bench/dashboard.py
serves it) and bull-board 9.10 on BullMQ 5 (npm, in a scratch folder:
bench/bullboard_peer.py) both on it. Each round seeds ``--jobs`` failed jobs
into the queue ``big`` and retries them all through one dashboard's HTTP API
(ours: ``POST /api/queues/bull/big/bulk/ {"action": "retry_all"}``, which also
records the action's cohort for "Recent actions"; bull-board:
``PUT /api/queues/big/retry/failed``), then seeds again for the other one; the
order alternates round by round so load from other work on the machine falls
on both alike. Timed: the request's wall time, and Redis's CPU over it
(``/proc/<redis pid>/stat``) per retried job. Printed: each round, the ranges
and medians, and ours / bull-board of the median times (target <= 0.1).
Where Node or npm is missing, ours alone.

Beside them, as the floor of the method, BullMQ's own ``Queue.retryJobs``
(5.81, bench/bullmq_node/runtime.js, 1,000 jobs a call) on the same seeded
jobs, timed inside Node: no HTTP, no dashboard, no check of a job before it
is written, no priorities, no record of what moved (``--no-bullmq``: not run).
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import bullboard_peer  # bench/, on the path as the script's folder
import npm_peer


def _dashboard_bench() -> Any:
    """bench/dashboard.py (the stack, the session, the seeding), loaded by
    its path: its module name is the Django app's package name."""
    spec = importlib.util.spec_from_file_location(
        "bench_dashboard", Path(__file__).resolve().parent / "dashboard.py"
    )
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # its dataclasses look themselves up there
    spec.loader.exec_module(module)
    return module


bench = _dashboard_bench()  # puts the repository on sys.path, too

from queues.connection import connect  # noqa: E402
from tests.dashboard_seed import seed_failed_bulk  # noqa: E402


def redis_cpu(pid: int) -> float:
    """User + system CPU seconds of a process so far (the Redis server, a
    dashboard)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def reseed(client: object, jobs: int) -> None:
    """The queue ``big`` holding ``jobs`` failed jobs and nothing else: what
    the last round left (its jobs now waiting, their events) goes first."""
    keys = bench.BIG.keys
    doomed = list(client.scan_iter(match=f"{keys.base}*", count=10_000))  # type: ignore[attr-defined]
    for first in range(0, len(doomed), 10_000):
        client.unlink(*doomed[first : first + 10_000])  # type: ignore[attr-defined]
    seed_failed_bulk(client, keys, jobs)  # type: ignore[arg-type]


def timed(
    pid: int, server_pid: int, action: Callable[[], int], jobs: int
) -> tuple[float, float, float]:
    """Seconds of ``action``, Redis's CPU per job (us) over it, and the CPU
    seconds of the dashboard process ``server_pid`` over it."""
    cpu, server, started = redis_cpu(pid), redis_cpu(server_pid), time.perf_counter()
    retried = action()
    elapsed = time.perf_counter() - started
    assert retried == jobs, f"retried {retried} of {jobs}"
    return elapsed, (redis_cpu(pid) - cpu) / jobs * 1e6, redis_cpu(server_pid) - server


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--jobs", type=int, default=100_000)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--app", default="dashboard.asgi:application")
    parser.add_argument("--no-bullmq", action="store_true", help="leave BullMQ's own retry out")
    args = parser.parse_args()
    peer_folder, why_not = bullboard_peer.prepare()
    bullmq_folder = None
    if not args.no_bullmq:
        bullmq_folder, _ = npm_peer.prepare(
            Path(__file__).resolve().parent / "bullmq_node", ["runtime.js"]
        )
    print(
        f"retry-all of {args.jobs:,} failed jobs over HTTP, {args.rounds} rounds; peer: "
        f"{'bull-board 9.10.1 (npm) on BullMQ 5' if peer_folder else why_not}; "
        f"load average {' '.join(f'{x:.2f}' for x in os.getloadavg())}"
    )
    workdir = Path(tempfile.mkdtemp(prefix="echomq-bench-retry-"))
    stack = bench.start_stack(0, workdir, args.app, peer_folder)
    assert stack.redis.process is not None
    pid = stack.redis.process.pid
    client = connect(stack.redis.url)

    def ours() -> int:
        status, body = stack.session.post_json(
            "/api/queues/bull/big/bulk/", {"action": "retry_all"}
        )
        assert status == 200, (status, body)
        return int(body["count"])

    def theirs() -> int:
        assert stack.peer_port is not None
        peer = bench.Session(stack.peer_port)
        status, body = peer.request("PUT", f"/api/queues/{bench.BIG.name}/retry/failed")
        assert status == 200, (status, body)
        return int(bench.json.loads(body)["retried"])

    def bullmq_own() -> tuple[float, float, float]:
        """BullMQ's Queue.retryJobs in Node: its own wall time and Redis CPU
        per job (Node's start-up is not timed), no dashboard."""
        assert bullmq_folder is not None
        socket = str(stack.redis.socket_path)
        options = {"phase": "retry", "socket": socket, "redisPid": pid}
        options.update(queue=bench.BIG.name, prefix=bench.BIG.prefix)
        done = subprocess.run(
            ["node", "runtime.js", json.dumps(options)],
            cwd=bullmq_folder, capture_output=True, text=True, timeout=600, check=True,
        )  # fmt: skip
        figures = json.loads(done.stdout.strip().splitlines()[-1])
        return figures["wall"], figures["redis_cpu"] / args.jobs * 1e6, 0.0

    runs: dict[str, list[tuple[float, float, float]]] = {"ours": [], "bull-board": [], "bullmq": []}
    servers = {"ours": stack.server.pid, "bull-board": stack.peer.pid if stack.peer else 0}
    sides = [("ours", ours)] + ([("bull-board", theirs)] if stack.peer_port else [])
    sides += [("bullmq", lambda: 0)] if bullmq_folder else []
    try:
        for round_ in range(args.rounds):
            for label, action in sides if round_ % 2 == 0 else sides[::-1]:
                reseed(client, args.jobs)
                if label == "bullmq":
                    seconds, cpu, server = bullmq_own()
                else:
                    seconds, cpu, server = timed(pid, servers[label], action, args.jobs)
                assert client.llen(bench.BIG.keys.wait) == args.jobs
                runs[label].append((seconds, cpu, server))
                print(
                    f"  round {round_ + 1} {label:<10} {seconds:6.2f} s  redis {cpu:5.1f} us/job"
                    f"  dashboard cpu {server:5.2f} s"
                )
    finally:
        bench.stop_stack(stack)
    medians = {}
    for label, values in runs.items():
        if not values:
            continue
        seconds = sorted(v[0] for v in values)
        cpus = sorted(v[1] for v in values)
        servers_cpu = sorted(v[2] for v in values)
        medians[label] = statistics.median(seconds)
        print(
            f"{label:<10} {seconds[0]:.2f}-{seconds[-1]:.2f} s (median {medians[label]:.2f})"
            f" | redis cpu per job {cpus[0]:.1f}-{cpus[-1]:.1f} us"
            f" | dashboard cpu {servers_cpu[0]:.2f}-{servers_cpu[-1]:.2f} s"
        )
    if "bull-board" in medians:
        ratio = medians["ours"] / medians["bull-board"]
        print(f"ours / bull-board: {ratio:.3f} (target <= 0.1)")
        if "bullmq" in medians:
            floor = medians["bullmq"] / medians["bull-board"]
            print(f"bullmq's own retryJobs / bull-board: {floor:.3f}")
    print(f"load average after: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")


if __name__ == "__main__":
    main()
