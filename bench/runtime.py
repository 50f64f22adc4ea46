"""The runtime's cost per job next to BullMQ's own Node.js runtime, on one private Redis.

    python bench/runtime.py [--jobs 50000] [--concurrency 100] [--rounds 3]
                            [--batch 1000] [--tree LABEL=PATH ...] [--no-peer]

The matched worker bench: ``--jobs`` no-op jobs with ``removeOnComplete``,
added in bulk (batches of ``--batch``), then processed by one worker with
``--concurrency`` slots, timed from the first job the processor sees until
wait and active are empty again. Redis's CPU is read from
``/proc/<redis pid>/stat`` (utime + stime) at both ends, so it counts what
Redis spent on this queue's work and nothing else. Bulk adds are timed the
same way. Every run is a child process of its own on a flushed Redis, and
the runtimes take turns, round after round (``--rounds``), so load from
other processes on a shared machine falls on all of them alike; each
prints its range over the rounds and its median.

``--tree LABEL=PATH`` runs our runtime from another checkout too (its
``queues`` and ``priv/scripts``), e.g. ``--tree main=/work/main`` for the
figures before a change, in the same run. BullMQ (Node) is the version
pinned in bench/bullmq_node/package.json, installed from npm into a scratch
folder (bench/npm_peer.py); where Node or npm is missing it is left out.

Printed per runtime and phase: jobs/s, Redis CPU per job (us) and the
commands Redis ran per job (script calls and the commands inside them, from
``INFO commandstats``), then the ratios of the medians against BullMQ.
Targets: Redis CPU per processed job <= 0.75x BullMQ's, so processing
>= 1.3x; bulk add >= 2x.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
QUEUE = "bench"
PAYLOAD = {"n": 0}
SCRIPT_CALLS = ("evalsha", "eval", "fcall")


def redis_cpu(pid: int) -> float:
    """User + system CPU seconds of the Redis server so far."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def command_calls(client: Any) -> dict[str, int]:
    return {
        name.removeprefix("cmdstat_"): int(stats["calls"])
        for name, stats in client.info("commandstats").items()
    }


# -- our runtime, in a child process ------------------------------------------------


async def run_ours(args: argparse.Namespace) -> dict[str, Any]:
    """One phase of our runtime; imports ``queues`` from the tree on sys.path."""
    from queues.connection import connect
    from queues.queue import Queue
    from queues.worker import Worker

    client = connect(args.url)
    queue = Queue(QUEUE, client)
    specs = [("tiny", PAYLOAD, {"removeOnComplete": True}) for _ in range(args.jobs)]
    marks: list[tuple[float, float, dict[str, int]]] = []

    def mark() -> None:
        marks.append((time.perf_counter(), redis_cpu(args.redis_pid), command_calls(client)))

    if args.phase == "add":
        mark()
        queue.add_bulk(specs, batch=args.batch)
        mark()
    else:
        queue.add_bulk(specs, batch=args.batch)
        seen = 0
        all_taken = asyncio.Event()

        async def noop(job: Any) -> None:
            nonlocal seen
            if not marks:
                mark()
            seen += 1
            if seen == args.jobs:
                all_taken.set()

        worker = Worker(QUEUE, noop, connection_url=args.url, concurrency=args.concurrency)
        task = asyncio.create_task(worker.run())
        await all_taken.wait()
        while client.llen(queue.keys.wait) or client.llen(queue.keys.active):
            await asyncio.sleep(0.001)
        mark()
        await worker.close()
        await task
    (start, cpu_start, calls_start), (end, cpu_end, calls_end) = marks
    calls = {name: n - calls_start.get(name, 0) for name, n in calls_end.items()}
    return {"wall": end - start, "redis_cpu": cpu_end - cpu_start, "calls": calls}


def child(args: argparse.Namespace) -> None:
    sys.path.insert(0, args.tree[-1])  # whose ``queues`` runs
    print(json.dumps(asyncio.run(run_ours(args))))


# -- the parent: runs the children in turns ------------------------------------------


def run_child(runtime: str, phase: str, args: argparse.Namespace, env: dict[str, Any]) -> Any:
    options = {
        "phase": phase,
        "jobs": args.jobs,
        "concurrency": args.concurrency,
        "batch": args.batch,
        "redisPid": env["pid"],
    }
    if runtime == "bullmq":
        command = ["node", "runtime.js", json.dumps({**options, "socket": env["socket"]})]
        cwd = env["peer"]
    else:
        command = [sys.executable, __file__, "--child", "--phase", phase, "--url", env["url"]]
        command += ["--redis-pid", str(env["pid"]), "--jobs", str(args.jobs)]
        command += ["--concurrency", str(args.concurrency), "--batch", str(args.batch)]
        command += ["--tree", env["trees"][runtime]]
        cwd = None
    env["client"].flushall()
    env["client"].config_resetstat()
    try:
        done = subprocess.run(command, cwd=cwd, capture_output=True, text=True, timeout=900)
    except subprocess.TimeoutExpired:
        sys.exit(f"{runtime} {phase} did not finish in 15 minutes")
    if done.returncode != 0:
        sys.exit(f"{runtime} {phase} failed:\n{done.stderr.strip()[-2000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def per_job(result: dict[str, Any], jobs: int) -> dict[str, float]:
    calls = {
        name: n for name, n in result["calls"].items() if name not in ("info", "config|resetstat")
    }
    scripts = sum(calls.get(name, 0) for name in SCRIPT_CALLS)
    return {
        "rate": jobs / result["wall"],
        "redis_us": result["redis_cpu"] / jobs * 1e6,
        "scripts": scripts / jobs,
        "commands": (sum(calls.values()) - scripts) / jobs,
    }


def span(values: list[float], digits: int = 0) -> str:
    low, high = min(values), max(values)
    return f"{low:,.{digits}f}" if low == high else f"{low:,.{digits}f}-{high:,.{digits}f}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--jobs", type=int, default=50_000)
    parser.add_argument("--concurrency", type=int, default=100)
    parser.add_argument("--batch", type=int, default=1000)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--tree", action="append", default=[], metavar="LABEL=PATH")
    parser.add_argument("--no-peer", action="store_true", help="leave BullMQ (Node) out")
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--phase", choices=["add", "process"], help=argparse.SUPPRESS)
    parser.add_argument("--url", help=argparse.SUPPRESS)
    parser.add_argument("--redis-pid", type=int, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        child(args)
        return

    sys.path.insert(0, str(HERE.parent))
    import npm_peer

    from queues.connection import connect
    from queues.redis_server import LocalRedisServer

    trees = {"ours": str(HERE.parent)}
    for given in args.tree:
        label, _, path = given.partition("=")
        trees[label] = str(Path(path).resolve())
    runtimes = list(trees)
    peer, why_not = (
        (None, "--no-peer")
        if args.no_peer
        else npm_peer.prepare(HERE / "bullmq_node", ["runtime.js"])
    )
    if peer is None:
        print(f"BullMQ (Node) left out: {why_not}")
    else:
        runtimes.insert(0, "bullmq")
    binary = shutil.which("redis-server")
    if binary is None:
        sys.exit("bench/runtime.py needs redis-server on PATH")
    server = LocalRedisServer(binary).start()
    assert server.process is not None
    client = connect(server.url)
    env = {
        "pid": server.process.pid,
        "url": server.url,
        "socket": str(server.socket_path),
        "peer": str(peer),
        "trees": trees,
        "client": client,
    }
    version = client.info("server")["redis_version"]
    print(
        f"redis-server {version} (private, unix socket); {args.jobs:,} jobs, concurrency "
        f"{args.concurrency}, removeOnComplete, {args.rounds} rounds; "
        f"load average {' '.join(f'{x:.2f}' for x in os.getloadavg())}"
    )
    results: dict[str, dict[str, list[dict[str, float]]]] = {
        phase: {name: [] for name in runtimes} for phase in ("process", "add")
    }
    try:
        for round_number in range(args.rounds):
            order = runtimes if round_number % 2 == 0 else runtimes[::-1]
            for phase in ("process", "add"):
                for name in order:
                    figures = per_job(run_child(name, phase, args, env), args.jobs)
                    results[phase][name].append(figures)
                    print(
                        f"  round {round_number + 1} {phase:<7} {name:<10} "
                        f"{figures['rate']:>8,.0f} jobs/s  redis {figures['redis_us']:5.1f} us/job",
                        flush=True,
                    )
    finally:
        client.close()
        server.stop()
    print(f"load average after: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    for phase, title in (("process", "process (no-op)"), ("add", "bulk add")):
        print(title)
        medians: dict[str, dict[str, float]] = {}
        for name, rounds in results[phase].items():
            medians[name] = {key: statistics.median(r[key] for r in rounds) for key in rounds[0]}
            print(
                f"  {name:<10} {span([r['rate'] for r in rounds]):>15} jobs/s"
                f" (median {medians[name]['rate']:,.0f}) | redis cpu per job"
                f" {span([r['redis_us'] for r in rounds], 1):>11} us"
                f" (median {medians[name]['redis_us']:.1f}) | per job: "
                f"{medians[name]['scripts']:.2f} script calls,"
                f" {medians[name]['commands']:.1f} commands"
            )
        if "bullmq" in medians:
            peer_median = medians["bullmq"]
            for name in trees:
                print(
                    f"  {name}/bullmq: jobs/s {medians[name]['rate'] / peer_median['rate']:.2f}x,"
                    f" redis cpu per job {medians[name]['redis_us'] / peer_median['redis_us']:.2f}x"
                )
    if "bullmq" in runtimes:
        print("targets: process redis cpu per job <= 0.75x (jobs/s >= 1.3x); bulk add >= 2x")


if __name__ == "__main__":
    main()
