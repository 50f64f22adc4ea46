"""The site as shipped (docs/deploy.md, "Redis behind Sentinel") on a master, a
replica and three sentinels, all real redis-server processes (tests/sentinel.py:
the sentinels see a master down after 1 s, production's default is 30 s).

The user's only setting is ``REDIS_URL=redis+sentinel://…/queues/0``. After the
on-call walk, the master is killed (SIGKILL) while a worker of our runtime
processes 10,000 jobs and the queue's page is open: the page says Redis is
failing over, then is live again from the new master; the history collector
and the worker go on by themselves; every job ends completed once on the new
master. The failover's figures are printed.
"""

from __future__ import annotations

import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

import pytest
from playwright.sync_api import Page, expect
from redis import Redis

from queues.keys import COLLECTOR_STATUS, QueueKeys
from queues.queue import Queue
from queues.read.refs import QueueRef
from tests.e2e.server import ROOT, terminate
from tests.e2e.shipped import (
    SentinelRedis,
    ShippedSite,
    kept_environment,
    on_call_walk,
    wait_live,
    wait_until,
)

JOBS = 10_000
# The worker's lock and stalled check (its own options; 30 s by default).
LOCK_MS = 5_000
FAILOVER_WORKER = ROOT / "tests" / "e2e" / "failover_worker.py"


@pytest.fixture(scope="module")
def topology() -> SentinelRedis:
    return SentinelRedis()


def test_the_shipped_site_behind_sentinel(
    page: Page, site: ShippedSite, topology: SentinelRedis
) -> None:
    on_call_walk(page, site, QueueRef("bull", "receipts"))
    # What the site holds on the sentinels: each of its clients asks the first
    # sentinel that answers, over a connection of its own (the sentinels'
    # links to each other are named sentinel-…).
    held = []
    for sentinel in topology.sentinels.sentinels:
        client = sentinel.client(None)
        held.append(
            sum(1 for c in client.client_list() if not c["name"].startswith("sentinel-")) - 1
        )
        client.close()
    print(f"\nconnections to the sentinels after the walk: {held}")


def live_states(page: Page) -> None:
    """Keep every value the page's html[data-live] takes, with when (ms)."""
    page.evaluate(
        """() => {
        window.__live = [[Date.now(), document.documentElement.dataset.live]];
        new MutationObserver(() => window.__live.push(
            [Date.now(), document.documentElement.dataset.live]
        )).observe(document.documentElement, {attributes: true, attributeFilter: ["data-live"]});
    }"""
    )


def resumed(page: Page, client: Redis, keys: QueueKeys, named: float) -> dict[str, float]:
    """Seconds from ``named`` (the sentinels naming the new master) until the
    page is live again, the history collector has caught up on the new master,
    and the worker completes jobs there."""
    named_ms = int(time.time() * 1000)
    firsts: dict[str, float] = {}
    completed_then = client.zcard(keys.completed)
    while len(firsts) < 3:
        since = time.monotonic() - named
        assert since < 20, f"not all back within 20 s: {firsts}"
        live = page.evaluate("document.documentElement.dataset.live")
        if "page" not in firsts and live == "open":
            firsts["page"] = since
        caught_up = int(client.hget(COLLECTOR_STATUS, "caught_up_ms") or 0)
        if "history" not in firsts and caught_up >= named_ms:
            firsts["history"] = since
        if "worker" not in firsts and client.zcard(keys.completed) > completed_then:
            firsts["worker"] = since
        time.sleep(0.05)
    return firsts


def test_a_sigkill_of_the_master_under_10000_jobs_loses_nothing(
    page: Page, site: ShippedSite, topology: SentinelRedis, tmp_path: Path
) -> None:
    client = site.redis()
    queue = Queue("failover", client)
    keys = QueueKeys("failover")
    jobs = [("settle-invoice", {"invoice": f"inv_{n:05d}"}, None) for n in range(JOBS)]
    ids = queue.add_bulk(jobs)
    client.execute_command("WAIT", 1, 5000)  # replicated: the jobs outlive the master
    page.goto("/queues/bull/failover/?state=completed")
    wait_live(page)
    live_states(page)

    runs = tmp_path / "runs.txt"
    env = kept_environment() | {"PYTHONPATH": str(ROOT), "REDIS_URL": site.topology.url}
    log = tmp_path / "worker.log"
    command = [sys.executable, str(FAILOVER_WORKER), "failover", str(runs)]
    with log.open("wb") as output:
        worker = subprocess.Popen(
            [*command, "--lock-ms", str(LOCK_MS)],
            cwd=ROOT, env=env, stdout=output, stderr=subprocess.STDOUT,
        )  # fmt: skip
    try:
        wait_until(lambda: "ready" in log.read_text(), 20, "the worker started")
        wait_until(lambda: client.zcard(keys.completed) >= 2_000, 60, "2,000 jobs completed")
        sentinels = topology.sentinels
        old = sentinels.kill_master()
        at_kill = runs.read_text().count("\n")
        failover_s = sentinels.wait_for_new_master(old)
        named = time.monotonic()
        again = resumed(page, client, keys, named)
        wait_until(lambda: client.zcard(keys.completed) == JOBS, 120, f"{JOBS:,} completed")
        done_s = time.monotonic() - named
    finally:
        terminate(worker)

    # Every job completed once on the new master, none left anywhere else.
    counts_now = queue.get_counts()
    assert counts_now.pop("completed") == JOBS
    assert set(counts_now.values()) == {0}, counts_now
    assert {i.decode() for i in client.zrange(keys.completed, 0, -1)} == set(ids)
    # The page shows the new master's counts, live.
    expect(page.locator('[data-count-state="completed"]')).to_have_attribute(
        "data-count", str(JOBS), timeout=10_000
    )
    states = [state for _, state in page.evaluate("window.__live")]
    assert "failing-over" in states, states
    assert states[-1] == "open", states
    # Nothing was written to a replica: the new master, a replica until the
    # failover, refused no write.
    assert "errorstat_READONLY" not in client.info("errorstats")

    # At least once: a job runs again when what its first run did never reached
    # the new master. Which way each came back:
    counts = Counter(runs.read_text().split())
    assert set(counts) == set(ids), "a job was never run"
    twice = [job_id for job_id, runs_of_it in counts.items() if runs_of_it > 1]
    stalled = [job_id for job_id in twice if int(client.hget(keys.job(job_id), "stc") or 0) > 0]
    print(
        f"\nSIGKILL of the master after {at_kill:,} runs: the sentinels named the new master"
        f" {failover_s:.2f} s later; from then, the page live again {again['page']:.2f} s,"
        f" the history collector caught up {again['history']:.2f} s, the worker completing"
        f" again {again['worker']:.2f} s, all {JOBS:,} completed {done_s:.1f} s;"
        f" {len(counts):,} jobs run, {len(twice)} of them twice: {len(stalled)} recovered by"
        f" the stalled check (lock {LOCK_MS} ms), {len(twice) - len(stalled)} taken again from"
        f" wait (their pick-up never reached the replica); page states {states}"
    )
    assert again["page"] < 5
    assert again["history"] < 5
    assert all(runs_of_it <= 2 for runs_of_it in counts.values()), counts.most_common(3)
    client.close()
