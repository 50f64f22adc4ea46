"""CPU time per request of one page, in process: a figure a busy machine
cannot spoil the way it spoils wall-clock milliseconds.

    python bench/page_cpu.py failed|overview [--requests 300] [--rounds 5] [--profile]

A private redis-server seeded as bench/dashboard.py seeds it ("failed": 20
small queues and ``big`` with 1,000 failed jobs, timing the failed list's
JSON of 50 rows; "overview": 1,000 queues, timing the overview page), a
throw-away SQLite database with one user who may view, and Django's test
client (the whole middleware stack and view, no HTTP server). It prints the
process CPU milliseconds per request of each round (time.process_time) and
the lowest; ``--profile`` adds a cProfile of 100 more requests. Compare two
trees by running each in turn, alternating, several times (CPU time still
grows on a loaded machine: cores are shared, caches too).
"""

from __future__ import annotations

import argparse
import cProfile
import os
import pstats
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

PATHS = {
    "failed": "/api/queues/bull/big/jobs/?state=failed&start=0&end=49",
    "overview": "/",
}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("page", choices=sorted(PATHS))
    parser.add_argument("--requests", type=int, default=300, help="per run, over the rounds")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--profile", action="store_true")
    args = parser.parse_args()

    workdir = tempfile.mkdtemp(prefix="page-cpu-")
    os.environ.update(
        DJANGO_SETTINGS_MODULE="dashboard.settings",
        ECHOMQ_DB=f"{workdir}/db.sqlite3",
        DEBUG="0",
        LOG_LEVEL="ERROR",
        ECHOMQ_HISTORY_COLLECTOR="0",
    )
    from queues.redis_server import LocalRedisServer, server_binary

    redis = LocalRedisServer(server_binary()[0]).start()
    os.environ["REDIS_URL"] = redis.url
    try:
        run(args, redis.url)
    finally:
        redis.stop()


def run(args: argparse.Namespace, redis_url: str) -> None:
    import django

    django.setup()
    from django.contrib.auth.models import Permission, User
    from django.core.management import call_command
    from django.test import Client

    from queues.connection import connect
    from queues.read.refs import QueueRef
    from tests.dashboard_seed import seed_failed_bulk, seed_job

    call_command("migrate", verbosity=0)
    user = User.objects.create_user("bench", password=None, is_staff=True)
    user.user_permissions.add(*Permission.objects.filter(content_type__app_label="dashboard"))

    client = connect(redis_url)
    queues, jobs_per_state = (1_000, 2) if args.page == "overview" else (20, 5)
    for number in range(queues):  # as bench/dashboard.py's seed_small_queues
        keys = QueueRef("bull", f"queue-{number:04d}").keys
        for state in ("wait", "delayed", "completed", "failed"):
            for n in range(jobs_per_state):
                seed_job(client, keys, f"{state}-{n}", state=state)
        client.lpush(keys.metrics_data("completed"), *range(30))
    if args.page == "failed":
        seed_failed_bulk(client, QueueRef("bull", "big").keys, 1_000)

    browser = Client()
    browser.force_login(user)
    path = PATHS[args.page]
    first = browser.get(path)
    assert first.status_code == 200, first.status_code
    for _ in range(20):  # warm: templates, scripts, caches
        browser.get(path)
    per_round = max(1, args.requests // args.rounds)
    figures = []
    for _ in range(args.rounds):
        started = time.process_time()
        for _ in range(per_round):
            browser.get(path)
        figures.append((time.process_time() - started) / per_round * 1000)
    print(
        f"{args.page}: {len(first.content) / 1024:.0f} KB; CPU ms per request by round:"
        f" {' '.join(f'{f:.2f}' for f in figures)}; lowest {min(figures):.2f}"
        f" (load average {os.getloadavg()[0]:.1f})"
    )
    if args.profile:
        profile = cProfile.Profile()
        profile.enable()
        for _ in range(100):
            browser.get(path)
        profile.disable()
        pstats.Stats(profile).sort_stats("cumulative").print_stats(40)


if __name__ == "__main__":
    main()
