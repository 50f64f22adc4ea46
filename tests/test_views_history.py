"""The queue page's history chart: loaded after the page, one slot per point
(or merged points), exact figures in each slot's readout, admin actions marked."""

from __future__ import annotations

import re
import time
from collections.abc import Callable
from typing import Any

from django.core.cache import cache
from redis import Redis

from dashboard.models import AuditEntry
from queues.collector import HistoryCollector
from queues.connection import connect
from queues.keys import COLLECTOR_STATUS, HistoryKeys
from queues.queue import Queue
from queues.read.refs import QueueRef
from tests.history_helpers import collect_until_read, job_events, write_events

REF = QueueRef("bull", "charted")
URL = "/queues/bull/charted/history/"


def seed(client: Redis, url: str) -> int:
    """12 jobs finished a few minutes ago (3 failed); returns their start (ms)."""
    base = int(time.time() * 1000) - 5 * 60_000
    events = [e for n in range(12) for e in job_events(f"j{n}", base + n, 250, 40, ok=n >= 3)]
    write_events(client, REF, events)
    Queue(REF.name, client).add("waiting")  # the backlog: 1
    collect_until_read(HistoryCollector(connect(url), lambda: [REF], name="t"))
    return base


def slots(html: str) -> list[str]:
    return re.findall(r'data-readout="([^"]*)"', html)


def test_the_queue_page_loads_its_history_after_itself(
    dashboard_redis: Redis, client_as: Callable[[str | None], Any]
) -> None:
    Queue(REF.name, dashboard_redis).add("n")
    page = client_as("viewer").get("/queues/bull/charted/").content.decode()
    assert f'hx-get="{URL}"' in page  # no range: the one that fits the data
    assert "data-history-chart" not in page  # the page itself reads no history


def test_a_history_never_collected_says_so_instead_of_a_flat_chart_of_zeros(
    dashboard_redis: Redis, redis_url: str, client_as: Callable[[str | None], Any]
) -> None:
    """The slot drew "0 completed, 0 failed in the last 24 hours" beside a
    header counting thousands, when no process had ever collected a history."""
    Queue(REF.name, dashboard_redis).add("n")
    client = client_as("viewer")
    never = client.get(URL, {"range": "24h"}).content.decode()
    assert "No history yet: no dashboard process has collected it" in never
    assert "<svg" not in never
    assert 'aria-current="true">24h<' in never  # another range is a click away
    # A collector that caught up a day ago: said, with how long ago.
    a_day_ago = int(time.time() * 1000) - 86_400_000 - 60_000
    dashboard_redis.hset(COLLECTOR_STATUS, mapping={"holder": "t", "caught_up_ms": a_day_ago})
    stale = client.get(URL, {"range": "1h"}).content.decode()
    assert "Nothing recorded in the last hour, and the collector last caught up 1 d ago" in stale
    # A current collector with nothing in the range: an idle queue, drawn.
    collect_until_read(HistoryCollector(connect(redis_url), lambda: [REF], name="t"))
    idle = client.get(URL, {"range": "1h"}).content.decode()
    assert "<svg" in idle
    assert "data-history-missing" not in idle


def test_each_range_draws_its_slots_with_exact_readouts(
    dashboard_redis: Redis, redis_url: str, client_as: Callable[[str | None], Any]
) -> None:
    seed(dashboard_redis, redis_url)
    client = client_as("viewer")
    expected = {"1h": 61, "24h": 288, "7d": 168, "30d": 180}
    bars = {"1h": "1 min", "24h": "5 min", "7d": "1 h", "30d": "4 h"}
    for name, count in expected.items():
        answer = client.get(URL, {"range": name})
        assert answer.status_code == 200
        html = answer.content.decode()
        # The count scale's numbers are jobs per bar: how long a bar is, said.
        assert f"jobs finished per {bars[name]} (failures below the line)" in html
        assert f'data-range="{name}"' in html
        assert len(slots(html)) == count, name
        busy = [words for words in slots(html) if "9 completed, 3 failures" in words]
        assert len(busy) == 1, name
        assert "wait p50 2" in busy[0]  # 250 ms, within a bucket
        assert "run p50 4" in busy[0]  # 40 ms
        assert "backlog 1" in html
    assert 'aria-current="true">7d<' in client.get(URL, {"range": "7d"}).content.decode()


def test_the_first_load_draws_the_shortest_range_that_holds_the_data(
    dashboard_redis: Redis, redis_url: str, client_as: Callable[[str | None], Any]
) -> None:
    """A history that began minutes ago was a sliver at the right edge of 24
    hours: the first load draws the last hour; a range asked for stays."""
    seed(dashboard_redis, redis_url)
    viewer = client_as("viewer")
    first = viewer.get(URL).content.decode()
    assert 'data-range="1h"' in first
    assert len(slots(first)) == 61
    assert 'aria-current="true">1h<' in first
    assert 'data-range="24h"' in viewer.get(URL, {"range": "24h"}).content.decode()
    # Two hours of history: the day it spans.
    longer = QueueRef("bull", "charted-longer")
    now = int(time.time() * 1000)
    events = job_events("old", now - 2 * 3_600_000, 250, 40, ok=True)
    write_events(
        dashboard_redis, longer, events + job_events("new", now - 60_000, 250, 40, ok=True)
    )
    Queue(longer.name, dashboard_redis).add("waiting")
    collect_until_read(HistoryCollector(connect(redis_url), lambda: [longer], name="t"))
    assert 'data-range="24h"' in viewer.get("/queues/bull/charted-longer/history/").content.decode()


def test_a_bad_range_falls_back_to_24_hours_and_strangers_are_kept_out(
    dashboard_redis: Redis, client_as: Callable[[str | None], Any]
) -> None:
    Queue(REF.name, dashboard_redis).add("n")
    viewer = client_as("viewer")
    answer = viewer.get(URL, {"range": "<script>"})
    assert answer.status_code == 200
    assert 'data-range="24h"' in answer.content.decode()
    assert viewer.get("/queues/bull/nowhere/history/").status_code == 404
    assert client_as(None).get(URL).status_code == 302
    assert client_as("staff_noperm").get(URL).status_code == 403


def test_admin_actions_are_marked_on_the_chart(
    dashboard_redis: Redis, redis_url: str, client_as: Callable[[str | None], Any]
) -> None:
    seed(dashboard_redis, redis_url)
    AuditEntry.objects.create(
        user="oncall",
        action="retry_all",
        queue=REF.qualified,
        jobs="state=failed",
        count=3,
        result="Retried 3 <b>jobs</b>",
    )
    html = client_as("viewer").get(URL, {"range": "1h"}).content.decode()
    assert "retry all by oncall: Retried 3 &lt;b&gt;jobs&lt;/b&gt;" in html
    assert "<b>jobs" not in html


def test_the_overview_sums_up_the_last_hour_most_failing_first(
    dashboard_redis: Redis, redis_url: str, client_as: Callable[[str | None], Any], settings: Any
) -> None:
    # Listed, so that discovery (which rescans on its own schedule) need not find them.
    settings.ECHOMQ_QUEUES = ["bull:quiet", REF.qualified]
    Queue("quiet", dashboard_redis).add("n")
    viewer = client_as("viewer")
    before = viewer.get("/history/last-hour/").content.decode()
    assert "No metrics history yet" in before
    seed(dashboard_redis, redis_url)
    assert 'hx-get="/history/last-hour/"' in viewer.get("/").content.decode()
    cache.clear()  # the reading above is kept SUMMARY_CACHE_S: as if that had passed
    html = viewer.get("/history/last-hour/").content.decode()
    row = re.search(r'<tr data-summary-queue="bull:charted">(.*?)</tr>', html, re.S)
    assert row is not None
    cells = re.findall(r'<td class="num"[^>]*>(.*?)</td>', row.group(1), re.S)
    assert cells[:2] == ["9", "3"]
    assert "25%" in cells[2]
    assert "state-failed" in cells[2]
    assert cells[3].endswith(" ms")
    assert cells[4].endswith(" ms")
    assert "bull:quiet" not in html  # nothing happened there
    assert client_as(None).get("/history/last-hour/").status_code == 302


def test_a_queue_where_nothing_finished_says_it_has_no_failure_rate_as_it_has_no_times(
    dashboard_redis: Redis, redis_url: str, client_as: Callable[[str | None], Any], settings: Any
) -> None:
    """A queue without a worker is in the last hour by its backlog alone: its
    failure rate cell was empty beside the dashes of its wait and run (on a
    phone a label "failure rate, 1 h" followed by nothing)."""
    stuck = QueueRef("bull", "reports")
    settings.ECHOMQ_QUEUES = [stuck.qualified]
    Queue(stuck.name, dashboard_redis).add("monthly-report")
    collect_until_read(HistoryCollector(connect(redis_url), lambda: [stuck], name="t"))
    html = client_as("viewer").get("/history/last-hour/").content.decode()
    row = re.search(r'<tr data-summary-queue="bull:reports">(.*?)</tr>', html, re.S)
    assert row is not None
    cells = re.findall(r'<td class="num"[^>]*>(.*?)</td>', row.group(1), re.S)
    assert cells == ["0", "0", "\u2013", "\u2013", "\u2013", "1"]


def test_the_last_hour_is_read_once_for_every_viewer_within_its_cache_time(
    dashboard_redis: Redis, redis_url: str, client_as: Callable[[str | None], Any], settings: Any
) -> None:
    """12,000 small hashes for 200 queues: every overview load read them, so a
    few viewers reloading kept a core busy. One reading now serves them all."""
    settings.ECHOMQ_QUEUES = [REF.qualified]
    seed(dashboard_redis, redis_url)
    viewer = client_as("viewer")

    def minute_reads() -> int:
        stats = dashboard_redis.info("commandstats").get("cmdstat_hgetall", {})
        return int(stats.get("calls", 0))

    first = viewer.get("/history/last-hour/").content.decode()
    read = minute_reads()
    assert 'data-summary-queue="bull:charted"' in first
    for _ in range(5):
        assert viewer.get("/history/last-hour/").content.decode() == first
    assert minute_reads() == read
    cache.clear()  # its time is up
    viewer.get("/history/last-hour/")
    assert minute_reads() > read


def test_a_queue_whose_history_key_is_broken_says_its_history_stopped_and_why(
    dashboard_redis: Redis, redis_url: str, client_as: Callable[[str | None], Any]
) -> None:
    """The probe's ``SET 'echomq:history:{bull:cq1}:state' x``: the chart
    names the key to repair, above what was recorded before."""
    Queue(REF.name, dashboard_redis).add("n")
    state = HistoryKeys(REF.name, REF.prefix).state
    dashboard_redis.set(state, "x")
    collect_until_read(HistoryCollector(connect(redis_url), lambda: [REF], name="t"))
    html = client_as("viewer").get(URL, {"range": "1h"}).content.decode()
    (note,) = re.findall(r"<p [^>]*data-history-stopped>([^<]*)</p>", html)
    assert note == (
        f"The history of this queue stopped: its key {state} holds a string. Repair or delete"
        " that key in Redis (deleting the state key starts this queue's history over): it"
        " resumes within seconds. Other queues' history goes on."
    )
