"""Queue discovery on a large Redis: its share of Redis's time and how fast a new queue shows.

A private redis-server gets ``--keys`` unrelated keys (10 million by default,
made by ``DEBUG POPULATE``) and ``--queues`` queues. Then, in this process,
``queues.discovery`` runs as a dashboard process runs it, and the bench prints:

- Redis time share: the usec that INFO commandstats charges to the commands
  discovery sends (SCAN, CLIENT LIST, EXISTS, DBSIZE) over the wall-clock
  time, and Redis's CPU (INFO cpu) against an idle baseline of the same
  length measured first;
- time to appear: a new queue whose worker connects (named the BullMQ way),
  and a new queue nobody is connected to (shown once the background walk
  reaches it: the bench reports how long a whole walk takes).

    python bench/discovery.py                       # 10M keys, 120 s of measuring
    python bench/discovery.py --keys 1000000 --seconds 60
"""

from __future__ import annotations

import argparse
import base64
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from redis import Redis
from redis.exceptions import ConnectionError as RedisConnectionError

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from queues import discovery
from queues.connection import connect
from tests.e2e.server import free_port

COMMANDS = ("cmdstat_scan", "cmdstat_client|list", "cmdstat_exists", "cmdstat_dbsize")


def start_redis(workdir: Path) -> tuple[subprocess.Popen[bytes], str]:
    port = free_port()
    process = subprocess.Popen(
        [
            shutil.which("redis-server") or "redis-server",
            "--port", str(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no",
            "--dir", str(workdir), "--enable-debug-command", "local",
        ],
        stdout=subprocess.DEVNULL,
    )  # fmt: skip
    url = f"redis://127.0.0.1:{port}/0"
    deadline = time.monotonic() + 10
    while True:
        try:
            Redis.from_url(url).ping()
            return process, url
        except RedisConnectionError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.05)


def discovery_usec(client: Redis) -> float:
    stats = client.info("commandstats")
    return float(sum(stats.get(name, {}).get("usec", 0) for name in COMMANDS))


def cpu_seconds(client: Redis) -> float:
    info = client.info("cpu")
    return float(info["used_cpu_user"]) + float(info["used_cpu_sys"])


def wait_until_shown(client: Redis, name: str, timeout: float) -> float | None:
    began = time.monotonic()
    while time.monotonic() - began < timeout:
        if any(ref.name == name for ref in discovery.discover_queues(client, ["bull"])):
            return time.monotonic() - began
        time.sleep(0.1)
    return None


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--keys", type=int, default=10_000_000, help="unrelated keys")
    parser.add_argument("--queues", type=int, default=20)
    parser.add_argument("--seconds", type=float, default=120.0, help="measuring time")
    args = parser.parse_args()

    workdir = Path(tempfile.mkdtemp(prefix="echomq-discovery-"))
    server, url = start_redis(workdir)
    client = connect(url)
    try:
        began = time.monotonic()
        client.execute_command("DEBUG", "POPULATE", args.keys, "app:key", 20)
        for n in range(args.queues):
            client.set(f"bull:queue-{n}:id", 1)
            client.hset(f"bull:queue-{n}:meta", "opts.maxLenEvents", 10_000)
        print(
            f"redis: {client.dbsize():,} keys ({args.keys:,} unrelated, {args.queues} queues),"
            f" loaded in {time.monotonic() - began:.0f} s; walk duty {discovery.SCAN_DUTY:.1%}"
            f" ({discovery.FIRST_WALK_DUTY:.0%} for the first walk),"
            f" CLIENT LIST every {discovery.CONNECTIONS_INTERVAL_S:.0f} s"
        )

        client.config_resetstat()
        cpu_before, idle_began = cpu_seconds(client), time.monotonic()
        time.sleep(args.seconds / 4)
        idle_share = (cpu_seconds(client) - cpu_before) / (time.monotonic() - idle_began)

        began = time.monotonic()
        shown = discovery.discover_queues(client, ["bull"])
        print(
            f"first use: {time.monotonic() - began:.2f} s, {len(shown)} of {args.queues} queues"
            " known at once (the rest come with the walk)"
        )

        # A new queue whose worker connects.
        client.set("bull:new-with-worker:id", 1)
        worker = connect(url, client_name="bull:" + base64.b64encode(b"new-with-worker").decode())
        worker.ping()
        took = wait_until_shown(client, "new-with-worker", 60)
        print(f"new queue with a connected worker: shown after {took:.1f} s" if took else
              "new queue with a connected worker: NOT shown within 60 s")  # fmt: skip
        # A new queue nobody is connected to.
        client.set("bull:new-unconnected:id", 1)
        unconnected_since = time.monotonic()

        client.config_resetstat()
        usec_before, cpu_before = discovery_usec(client), cpu_seconds(client)
        began = time.monotonic()
        unconnected_after = None
        while time.monotonic() - began < args.seconds:
            time.sleep(0.5)
            if unconnected_after is None and any(
                ref.name == "new-unconnected" for ref in discovery.discover_queues(client, ["bull"])
            ):
                unconnected_after = time.monotonic() - unconnected_since
        wall = time.monotonic() - began
        usec = discovery_usec(client) - usec_before
        cpu_share = (cpu_seconds(client) - cpu_before) / wall
        stats = client.info("commandstats")
        scan = stats.get("cmdstat_scan", {})
        print(
            f"over {wall:.0f} s: discovery's commands took {usec / 1e6:.3f} s of Redis time"
            f" = {usec / 1e6 / wall:.2%} (SCAN: {scan.get('calls', 0):,} calls,"
            f" {scan.get('usec_per_call', 0):.0f} us each); Redis CPU {cpu_share:.2%}"
            f" against {idle_share:.2%} idle"
        )
        state = discovery.discovery_for(client, ["bull"])
        if state.last_pass_s is not None:
            walk_text = f"{state.last_pass_s:.0f} s ({state.last_pass_calls:,} SCAN calls)"
        else:
            # Not one whole walk yet: estimate it from the calls so far.
            calls = scan.get("calls", 0)
            needed = args.keys / discovery.SCAN_COUNT
            estimate = wall * needed / max(calls, 1)
            walk_text = f"about {estimate:.0f} s (estimated from {calls:,} calls)"
        print(f"whole walk of the keyspace: {walk_text}")
        print(
            "new queue nobody is connected to: "
            + (
                f"shown after {unconnected_after:.1f} s"
                if unconnected_after is not None
                else f"not shown after {time.monotonic() - unconnected_since:.0f} s"
                " (it shows when the walk reaches it)"
            )
        )
        worker.close()
    finally:
        discovery.clear_discovery_cache()
        server.terminate()
        server.wait(10)
        shutil.rmtree(workdir, ignore_errors=True)


if __name__ == "__main__":
    main()
