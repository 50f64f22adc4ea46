"""The overview's health words and shared-scale sparklines, and the queue page's chart."""

from __future__ import annotations

import re
import time
from collections.abc import Callable
from typing import Any, TypeVar

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from redis import Redis

from dashboard.shared.charts import queue_chart
from dashboard.shared.formatting import minute_label
from queues.read.counts import QueueSummary
from queues.read.refs import QueueRef
from queues.read.states import STATES
from queues.throughput import MINUTE_MS
from tests.dashboard_seed import now_ms, seed_job, seed_metrics

T = TypeVar("T")


@pytest.fixture
def viewer(dashboard_redis: Redis, client_as: Callable[[str | None], Any]) -> Any:
    return client_as("viewer")


@pytest.fixture
def actor(dashboard_redis: Redis, client_as: Callable[[str | None], Any]) -> Any:
    return client_as("actor")


def keys(name: str) -> Any:
    return QueueRef("bull", name).keys


def seed_queue_metrics(client: Redis, name: str, *args: Any, **kwargs: Any) -> None:
    """``seed_metrics`` for a queue that also has its id counter (discovery finds it)."""
    client.incr(keys(name).id)
    seed_metrics(client, keys(name), *args, **kwargs)


def page(client: Any, url: str) -> str:
    response = client.get(url)
    assert response.status_code == 200, response.content[:500]
    return str(response.content.decode())


def row(html: str, queue: str) -> str:
    start = html.index(f'data-queue="bull:{queue}"')
    return html[start : html.index("</tr>", start)]


def within_one_minute(make: Callable[[int], T]) -> tuple[int, T]:
    """``make(now)`` seeds and renders; done again if a minute began meanwhile
    (what the page aligns to would then differ from what the test expects)."""
    for _ in range(3):
        now = now_ms()
        made = make(now)
        if now_ms() // MINUTE_MS == now // MINUTE_MS:
            return now, made
    raise AssertionError("three minute boundaries in a row")


def test_overview_marks_queues_by_failure_rate_and_trend_not_by_any_failure(
    dashboard_redis: Redis, viewer: Any
) -> None:
    now = now_ms()
    # 2 failures against 2,000 completions in the last five minutes: healthy.
    seed_queue_metrics(dashboard_redis, "busy", [400] * 20, [0] * 19 + [2], now)
    seed_job(dashboard_redis, keys("busy"), "1", state="failed")
    # A real incident: 150 of 650 failed.
    seed_queue_metrics(dashboard_redis, "incident", [100] * 20, [0] * 15 + [30] * 5, now)
    # 0.5% for ten minutes, then 5.7%: rising, under the failing rate.
    seed_queue_metrics(dashboard_redis, "rising", [200] * 20, [0] * 5 + [1] * 10 + [12] * 5, now)
    # An hour-old incident whose workers have gone since: not an alarm now.
    seed_queue_metrics(dashboard_redis, "old", [100] * 20, [50] * 20, now - 120 * MINUTE_MS)
    # No metrics: the finished sets say 5 of 15 failed in the last minute.
    for n in range(10):
        seed_job(dashboard_redis, keys("bullmq"), f"c{n}", state="completed", score=now - 60_000)
    for n in range(5):
        seed_job(dashboard_redis, keys("bullmq"), f"f{n}", state="failed", score=now - 50_000)
    seed_job(dashboard_redis, keys("stuck"), "1", state="wait")
    seed_job(dashboard_redis, keys("paused"), "1", state="paused")
    dashboard_redis.hset(keys("paused").meta, "paused", 1)
    html = page(viewer, "/")

    assert 'class="">' in row(html, "busy")
    assert "badge state-failed" not in row(html, "busy")
    assert '<span class="health-detail">0.1% failed, last 5 min</span>' in row(html, "busy")
    assert 'class="has-failed"' in row(html, "incident")
    assert re.search(
        r'<span class="badge state-failed">failing</span> <span class="health-detail">'
        r"23% failed, last 5 min</span>",
        row(html, "incident"),
    )
    assert re.search(
        r'<span class="badge state-failed">failures rising</span> <span class="health-detail">'
        r"5.7% failed, last 5 min \(was 0.5%\)</span>",
        row(html, "rising"),
    )
    assert "health" not in row(html, "old")
    assert re.search(r">failing</span> <span class=\"health-detail\">33% failed, last \d min<",
                     row(html, "bullmq"))  # fmt: skip
    assert 'class="stuck"' in row(html, "stuck")
    # No worker is connected to it: said so (CLIENT LIST), not guessed.
    assert re.search(
        r'>no workers</span> <span class="health-detail">1 waiting; none finished; the oldest'
        r" added (just now|\d+ min ago) \(\d\d:\d\d UTC\)<",
        row(html, "stuck"),
    )
    assert "no workers" not in row(html, "paused")


def test_no_scale_is_stated_when_no_row_has_a_series(dashboard_redis: Redis, viewer: Any) -> None:
    """Every row said "no metrics" under a header saying "full height = 1/min"."""
    seed_job(dashboard_redis, QueueRef("bull", "plain").keys, "1")
    html = page(viewer, "/")
    assert "no metrics" in row(html, "plain")
    assert '<p class="spark-scale-note muted" hidden>' in html


def test_each_overview_row_is_drawn_on_its_own_scale_with_its_minutes_exact_on_hover(
    dashboard_redis: Redis, viewer: Any
) -> None:
    """Issue 21: one scale for every row ("full height = 2,000/min", set by an
    earlier burst elsewhere) drew a quiet queue's traffic and failures as a
    hairline."""

    def seed_and_render(now: int) -> str:
        seed_queue_metrics(dashboard_redis, "big", [7, 3, 1500, 900, 1200], [0, 0, 0, 0, 1], now)
        seed_queue_metrics(dashboard_redis, "small", [15, 15, 15], [2, 2, 2], now)
        return page(viewer, "/")

    now, html = within_one_minute(seed_and_render)
    assert 'Per minute, 30 min <span class="spark-scale">each row on its own scale</span>' in html
    assert "Per minute, 30 min: each row on its own scale" in html  # the phone's note
    assert "full height =" not in html

    def points(queue: str, kind: str) -> list[tuple[float, float]]:
        found = re.search(rf'class="spark-{kind}" points="([^"]*)"', row(html, queue))
        assert found
        return [tuple(map(float, p.split(","))) for p in found.group(1).split()]  # type: ignore[misc]

    big = points("big", "completed")
    assert len(big) == 5 + 2  # one point a minute and two closing the area on the line
    assert big[-2][0] == 90.0  # the newest minute at the right edge
    assert big[3][1] == 2.8  # 1,500 of 2,000 reaches three quarters of the 11 px up
    # 15 a minute is three quarters of its own row too, not a 2 px sliver of 2,000.
    assert {y for _, y in points("small", "completed")[1:-1]} == {2.8}
    # Its 2 failures a minute fill the half below (never finer than a tenth of 20).
    assert {y for _, y in points("small", "failed")[1:-1]} == {22.0}
    # The one failure among thousands is drawn, 2 px below the line (200/min full).
    assert points("big", "failed")[-2][1] == 13.0
    assert (
        'aria-label="3,610 completed, 1 failure in the last 5 min; full height 2,000/min up,'
        ' 200/min down"'
    ) in row(html, "big")
    assert "45 completed, 6 failures in the last 3 min; full height 20/min up, 2/min down" in (
        row(html, "small")
    )
    # Each minute's exact figures ride along for the readout under the pointer.
    newest = now // MINUTE_MS - 1
    assert (
        f'data-completed="7,3,1500,900,1200" data-failed="0,0,0,0,1" data-newest="{newest}"'
    ) in row(html, "big")
    assert '<tbody id="queue-rows" data-spark-slots="30">' in html
    assert re.search(
        r'title="latest full minute: 1,200 completed, 1 failure">1.2k/min<', row(html, "big")
    )


def test_queue_page_charts_the_hour_with_axes_exact_values_and_the_admins_actions(
    dashboard_redis: Redis, actor: Any
) -> None:
    emails = keys("emails")

    def seed_and_render(now: int) -> str:
        dashboard_redis.flushdb()
        # An hour of 40 completed a minute; 5 failed a minute until three minutes ago.
        seed_metrics(dashboard_redis, emails, [40] * 60, [5] * 57 + [0] * 3, now,
                     this_minute=(10, 0))  # fmt: skip
        seed_job(dashboard_redis, emails, "42", state="failed")
        actor.post("/queues/bull/emails/bulk/", {"action": "retry_all", "state": "failed"})
        return page(actor, "/queues/bull/emails/?state=wait")

    now, html = within_one_minute(seed_and_render)
    chart = html[html.index("<figure") : html.index("</figure>")]
    minute = now // MINUTE_MS * MINUTE_MS
    # 60 full minutes and this one, each with its exact counts.
    assert len(re.findall(r'<g class="minute[ "]', chart)) == 61
    assert (
        f"<title>{minute_label(minute - 60 * MINUTE_MS)}: 40 completed, 5 failures</title>" in chart
    )
    last = f"{minute_label(minute - MINUTE_MS)}: 40 completed, 0 failures"
    assert f"<title>{last}</title>" in chart
    assert (
        f'<g class="minute partial" data-when="{minute_label(minute)}, this minute so far"'
        ' data-completed="10" data-failed="0">'
    ) in chart
    # The failed bars stop three minutes before now: the fix shows.
    slots = re.findall(r'<g class="minute[ "][^>]*>.*?</g>', chart)
    assert ["bar-failed" in slot for slot in slots[-5:]] == [True, False, False, False, False]
    # Axes: a scale for each half, time ticks, words for what is up and down.
    for label in ("50/min", "25", "0", "5/min", "&#8722;50 min", "&#8722;10 min", "now"):
        assert f">{label}</text>" in chart, label
    # The readout under the chart says the last minute and the hour until hovered.
    assert f"Last full minute, {last} · 2,410 completed, 285 failures in the last hour</p>" in chart
    # A failure is not a failed job: the key says what the red bars count.
    assert 'title="Failures: each time a job failed for good. A job retried and failed' in chart
    # The retry-all the admin just did is marked, with its words on hover.
    marker = re.search(r'<g class="marker" data-marker="([^"]*)"><title>', chart)
    assert marker
    assert re.fullmatch(
        r"\d\d:\d\d:\d\d UTC · retry all by actor: 1 failed jobs moved back to waiting",
        marker.group(1),
    )
    assert "<summary>1 admin action in the last hour</summary>" in chart
    assert 'aria-label="Jobs finished per minute over the last hour: 2,410 completed, 285' in chart


def test_a_queue_without_metrics_says_why_it_has_no_chart_and_how_it_is_doing(
    dashboard_redis: Redis, viewer: Any
) -> None:
    now = now_ms()
    for n in range(3):
        seed_job(dashboard_redis, keys("emails"), f"c{n}", state="completed", score=now - 1000)
    seed_job(dashboard_redis, keys("emails"), "f", state="failed", score=now - 1000)
    html = page(viewer, "/queues/bull/emails/")
    assert 'class="queue-chart no-series"' in html
    assert "the workers of this queue keep no metrics" in html
    assert "25% failed, last" in html


def test_without_metrics_the_chart_is_drawn_from_a_current_history(
    dashboard_redis: Redis, redis_url: str, viewer: Any, settings: Any
) -> None:
    """BullMQ's metrics are a worker option most teams leave off: the collector's
    history draws the hour instead, and says so; a history no collector keeps
    current is not drawn (its empty minutes would claim an idle queue)."""
    from queues.collector import HistoryCollector
    from queues.connection import connect
    from queues.keys import COLLECTOR_STATUS
    from tests.history_helpers import collect_until_read, job_events, write_events

    settings.ECHOMQ_QUEUES = ["bull:emails"]
    ref = QueueRef("bull", "emails")
    seed_job(dashboard_redis, keys("emails"), "w", state="wait")
    three_minutes_ago = now_ms() - 3 * MINUTE_MS
    write_events(
        dashboard_redis,
        ref,
        [
            e
            for n in range(7)
            for e in job_events(f"j{n}", three_minutes_ago + n, 10, 10, ok=n >= 2)
        ],
    )
    collect_until_read(HistoryCollector(connect(redis_url), lambda: [ref], name="t"))
    html = page(viewer, "/queues/bull/emails/")
    assert "no-series" not in html
    assert "counted from the events" in html
    assert "5 completed, 2 failures in the last hour" in html
    minute = minute_label(three_minutes_ago // MINUTE_MS * MINUTE_MS)
    assert f'data-when="{minute}" data-completed="5" data-failed="2"' in html

    dashboard_redis.hset(COLLECTOR_STATUS, "caught_up_ms", now_ms() - 10 * MINUTE_MS)
    html = page(viewer, "/queues/bull/emails/")
    assert 'class="queue-chart no-series"' in html
    assert "no dashboard process collects the history" in html


def test_only_the_full_queue_page_reads_the_audit_trail(
    dashboard_redis: Redis, viewer: Any
) -> None:
    seed_metrics(dashboard_redis, keys("emails"), [40] * 5, [0] * 5, now_ms())
    seed_job(dashboard_redis, keys("emails"), "1", state="wait")

    def audit_reads(**headers: str) -> int:
        with CaptureQueriesContext(connection) as queries:
            viewer.get("/queues/bull/emails/?state=wait", headers=headers)
        return sum("dashboard_auditentry" in q["sql"] for q in queries.captured_queries)

    assert audit_reads() == 1
    assert audit_reads(**{"HX-Request": "true"}) == 0  # the live list refresh
    # The events tab reads no metrics: no chart, no audit rows.
    assert "queue-chart" not in page(viewer, "/queues/bull/emails/events/")


def test_minutes_before_the_metrics_began_are_gaps_and_the_series_line_up() -> None:
    now = 29_000_000 * MINUTE_MS + 30_000
    summary = QueueSummary(
        QueueRef("bull", "q"),
        dict.fromkeys(STATES, 0),
        False,
        completed_per_minute=[3, 4, 5],
        failed_per_minute=[1],  # another writer's shorter list: its newest minute is the last
        read_at_ms=now,
    )
    words = re.findall(r"<title>\d\d:\d\d UTC(?:, this minute so far)?: ([^<]*)</title>",
                       queue_chart(summary, []))  # fmt: skip
    assert words == ["no data"] * 57 + [
        "3 completed, 0 failures",
        "4 completed, 0 failures",
        "5 completed, 1 failure",
        "no data",  # this minute: not known without the metrics hash
    ]


def test_an_overview_row_without_metrics_says_whose_option_it_is_and_how_to_get_a_line(
    dashboard_redis: Redis, viewer: Any
) -> None:
    """It said "no metrics", as if the queue were broken: BullMQ's workers keep
    none unless told (their metrics option is off by default)."""
    seed_job(dashboard_redis, keys("emails"), "w", state="wait")
    spark = row(page(viewer, "/"), "emails")
    spark = spark[spark.index('<td class="spark">') :]
    assert ">workers keep no metrics</span>" in spark
    assert "(BullMQ's metrics worker option, off by default)" in spark
    assert "ECHOMQ_HISTORY_COLLECTOR" in spark
    assert ">no metrics<" not in spark


def test_the_overview_draws_rows_without_metrics_from_one_history_key_each_in_one_round_trip(
    dashboard_redis: Redis, redis_url: str, viewer: Any, settings: Any, monkeypatch: Any
) -> None:
    """Issue 21: such a row said "workers keep no metrics" though its own page
    charted it from the history. Reading that history's 31 minute hashes a
    queue cost a page of 100 such queues 15-19 ms of the overview's 40 ms
    (353a3bb took it back); the packed recent minutes cost one GET a queue,
    all in one round trip, and no minute hash is read."""
    from queues.collector import HistoryCollector
    from queues.connection import connect
    from queues.keys import COLLECTOR_STATUS, HistoryKeys
    from tests.history_helpers import collect_until_read, job_events, write_events
    from tests.round_trips import counted_sends

    names = ["emails", *(f"quiet-{n:02d}" for n in range(20))]
    refs = [QueueRef("bull", name) for name in names]
    settings.ECHOMQ_QUEUES = [ref.qualified for ref in refs]
    for ref in refs:
        seed_job(dashboard_redis, ref.keys, "w", state="wait")
    three_minutes_ago = now_ms() - 3 * MINUTE_MS
    events = [
        e for n in range(7) for e in job_events(f"j{n}", three_minutes_ago + n, 10, 10, ok=n >= 2)
    ]
    write_events(dashboard_redis, refs[0], events)
    collect_until_read(HistoryCollector(connect(redis_url), lambda: refs, name="t"))
    minutes = list(dashboard_redis.scan_iter(match="echomq:history:*m:*"))
    assert minutes, "the collector wrote no minute to read"
    page(viewer, "/")  # discovery's first look, out of the way
    time.sleep(2.1)  # OBJECT IDLETIME counts whole seconds since a key was last read
    with counted_sends(monkeypatch) as sent:
        html = page(viewer, "/")
    spark = row(html, "emails")
    assert '<svg class="sparkline"' in spark
    assert (
        "5 completed, 2 failures in the last 3 min; full height 5/min up, 2/min down;"
        " from the dashboard's history\""
    ) in spark
    assert "workers keep no metrics</span>" not in spark
    read = [key for key in minutes if dashboard_redis.object("idletime", key) < 2]
    assert not read, f"the overview read minute hashes: {read}"
    recent_keys = [HistoryKeys(ref.name, ref.prefix).recent.encode() for ref in refs]
    assert all(dashboard_redis.object("idletime", key) < 2 for key in recent_keys)
    carrying = [s for s in sent if any(key in b"".join(_chunks(s)) for key in recent_keys)]
    assert len(carrying) == 1  # all 21 GETs in one pipeline
    # A history no collector keeps current is not drawn: its empty minutes
    # would claim an idle queue.
    later = now_ms() + 5 * MINUTE_MS
    dashboard_redis.hset(COLLECTOR_STATUS, "caught_up_ms", later - 10 * MINUTE_MS)
    monkeypatch.setattr("queues.read.counts.time.time", lambda: later / 1000)
    assert ">workers keep no metrics</span>" in row(page(viewer, "/"), "emails")


def _chunks(sent: object) -> list[bytes]:
    """The bytes of one send_packed_command call (bytes, or a list of them)."""
    packed = sent[0] if isinstance(sent, tuple) and sent else sent
    if isinstance(packed, bytes | bytearray | memoryview):
        return [bytes(packed)]
    return [bytes(part) for part in packed]  # type: ignore[union-attr]
