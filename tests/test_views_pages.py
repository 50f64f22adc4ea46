from __future__ import annotations

import re
import time
from collections.abc import Callable
from typing import Any

import pytest
from redis import Redis

from queues.inspect import QueueRef
from tests.dashboard_seed import seed_events, seed_job, seed_jobs

KEYS = QueueRef("bull", "emails").keys
QUEUE_URL = "/queues/bull/emails/"


@pytest.fixture
def viewer(dashboard_redis: Redis, client_as: Callable[[str | None], Any]) -> Any:
    return client_as("viewer")


def _html(response: Any) -> str:
    assert response.status_code == 200, response.content[:500]
    return str(response.content.decode())


def test_overview_lists_every_queue_with_counts_paused_and_hooks(
    dashboard_redis: Redis, viewer: Any
) -> None:
    seed_jobs(dashboard_redis, KEYS, "failed", 3)
    seed_job(dashboard_redis, KEYS, "w", state="wait")
    dashboard_redis.hset(KEYS.meta, "paused", 1)
    dashboard_redis.lpush(KEYS.metrics_data("completed"), 4, 9)
    seed_job(dashboard_redis, QueueRef("bull", "a-quiet-one").keys, "1", state="completed")
    html = _html(viewer.get("/"))
    assert 'data-queue="bull:emails"' in html
    assert 'data-queue="bull:a-quiet-one"' in html
    row = html[html.index('data-queue="bull:emails"') :]
    assert re.search(r'data-count-state="failed" title="3 failed">3<', row)
    assert "paused</span>" in row
    assert 'class="spark-completed"' in row
    # Sorting by failed puts the failing queue first.
    by_failed = _html(viewer.get("/?sort=failed"))
    assert by_failed.index("bull:emails") < by_failed.index("bull:a-quiet-one")
    assert html.index("bull:a-quiet-one") < html.index('data-queue="bull:emails"')


def test_overview_without_queues_says_so(dashboard_redis: Redis, viewer: Any) -> None:
    assert "No queues yet" in _html(viewer.get("/"))


def test_queue_page_opens_on_failed_with_tabs_rows_and_pagination(
    dashboard_redis: Redis, viewer: Any
) -> None:
    for n in range(1, 61):
        seed_job(
            dashboard_redis,
            KEYS,
            str(n),
            state="failed",
            score=n,
            fields={"failedReason": f"Timeout {n}\nat line"},
        )
    seed_job(dashboard_redis, KEYS, "w1", state="wait")
    html = _html(viewer.get(QUEUE_URL))
    assert 'data-queue="bull:emails"' in html
    assert 'data-state="failed"' in html
    assert re.search(r'data-count-state="failed" title="60">60<', html)
    assert re.search(r'data-count-state="wait" title="1">1<', html)
    assert "1\u201350 of 60" in html
    assert html.count("data-job-id=") == 50
    assert 'data-job-id="60"' in html  # newest first
    assert "Timeout 60" in html
    assert "1/1" in html  # attempts made / allowed
    page2 = _html(viewer.get(QUEUE_URL + "?state=failed&page=2"))
    assert "51\u201360 of 60" in page2
    assert 'data-job-id="1"' in page2
    small = _html(viewer.get(QUEUE_URL + "?state=failed&size=20"))
    assert small.count("data-job-id=") == 20


def test_job_rows_show_progress_as_bar_and_percent_or_json_and_full_names_on_hover(
    dashboard_redis: Redis, viewer: Any
) -> None:
    long_name = "nightly-export-" + "x" * 80
    seed_job(dashboard_redis, KEYS, "bar", name=long_name, fields={"progress": 42})
    seed_job(
        dashboard_redis, KEYS, "obj", name="", fields={"progress": '{"step": "upload", "of": 3}'}
    )
    html = _html(viewer.get(QUEUE_URL + "?state=wait"))
    bar = html[html.index('data-job-id="bar"') :]
    assert re.search(r'<progress max="100" value="42"[^>]*></progress> <span class="pct">42%<', bar)
    assert f'<td class="name" title="{long_name}">{long_name}</td>' in bar
    obj = html[html.index('data-job-id="obj"') :]
    # Object progress reads as JSON, like the job page, not as a Python dict.
    assert "{&quot;step&quot;: &quot;upload&quot;, &quot;of&quot;: 3}" in obj
    assert "{&#x27;step&#x27;" not in obj
    assert '<span class="muted">(no name)</span>' in obj


def test_htmx_request_gets_only_the_table_fragment(dashboard_redis: Redis, viewer: Any) -> None:
    seed_jobs(dashboard_redis, KEYS, "wait", 3)
    html = _html(viewer.get(QUEUE_URL + "?state=wait", headers={"HX-Request": "true"}))
    assert "<html" not in html
    assert html.count("data-job-id=") == 3


def test_empty_tab_says_something_useful(dashboard_redis: Redis, viewer: Any) -> None:
    seed_jobs(dashboard_redis, KEYS, "completed", 2)
    html = _html(viewer.get(QUEUE_URL + "?state=failed"))
    assert re.search(r"No failed jobs\.\s+2 completed jobs are kept\.", html)
    dashboard_redis.lpush(KEYS.metrics_data("completed"), *([200] * 70))
    html = _html(viewer.get(QUEUE_URL + "?state=failed"))
    assert re.search(r"No failed jobs\.\s+12,000 completed in the last hour\.", html)
    overview = _html(viewer.get("/"))
    assert ">200/min<" in overview
    completed = _html(viewer.get(QUEUE_URL + "?state=completed&page=9"))
    # A page past the end is not an empty list.
    assert "No completed jobs." not in completed
    assert "Nothing on this page: the completed list has 2 jobs." in completed


def test_empty_active_tab_asks_about_workers_or_says_paused(
    dashboard_redis: Redis, viewer: Any
) -> None:
    seed_jobs(dashboard_redis, KEYS, "wait", 3)
    html = _html(viewer.get(QUEUE_URL + "?state=active"))
    assert re.search(r"No active jobs\. 3 waiting: are the workers running\?", html)
    dashboard_redis.hset(KEYS.meta, "paused", 1)
    html = _html(viewer.get(QUEUE_URL + "?state=active"))
    assert "No active jobs. The queue is paused: workers take no new jobs." in html


@pytest.mark.parametrize(
    ("url", "status"),
    [
        ("/queues/bull/nope/", 404),
        ("/queues/other/emails/", 404),
        ("/queues/bull/emails/?state=bogus", 400),
        ("/queues/bull/emails/job/missing", 404),
        ("/queues/bull/emails/events/?before=xyz", 400),
    ],
)
def test_unknown_queue_state_job_or_cursor(
    dashboard_redis: Redis, viewer: Any, url: str, status: int
) -> None:
    seed_job(dashboard_redis, KEYS, "1")
    assert viewer.get(url).status_code == status


def test_job_page_shows_state_reason_traces_logs_lock_and_timeline(
    dashboard_redis: Redis, viewer: Any
) -> None:
    seed_job(
        dashboard_redis,
        KEYS,
        "42",
        state="failed",
        name="send-welcome",
        data={"to": "ann@example.com"},
        opts={"attempts": 3},
        fields={
            "failedReason": "SMTP 550 mailbox unavailable",
            "stacktrace": '["Error: first\\n at a.js:1", "Error: second\\n at b.js:2"]',
            "atm": 2,
            "pb": "worker-7",
            "progress": "40",
            "returnvalue": "null",
        },
    )
    dashboard_redis.rpush(KEYS.logs("42"), *[f"log line {n}" for n in range(60)])
    seed_events(dashboard_redis, KEYS, [("failed", {"jobId": "42", "failedReason": "SMTP 550"})])
    html = _html(viewer.get(QUEUE_URL + "job/42"))
    assert 'data-job-state="failed"' in html
    assert 'data-job-id="42"' in html
    assert "send-welcome" in html
    assert "SMTP 550 mailbox unavailable" in html
    # Latest attempt first and open; the older one collapsed.
    assert html.index("Error: second") < html.index("Error: first")
    assert "<details open>\n    <summary>Attempt 2 (latest)" in html
    assert "2/3" in html
    assert "worker-7" in html
    assert (
        '<span class="j-key">&quot;to&quot;</span>: '
        '<span class="j-str">&quot;ann@example.com&quot;</span>'
    ) in html
    assert "log line 49" in html
    assert "log line 50" not in html
    assert "Later →" in html
    later = _html(viewer.get(QUEUE_URL + "job/42?logs=2"))
    assert "log line 59" in later
    logs_fragment = _html(
        viewer.get(QUEUE_URL + "job/42?logs=2&fragment=logs", headers={"HX-Request": "true"})
    )
    assert "<html" not in logs_fragment
    assert "log line 55" in logs_fragment
    assert "Created" in html
    assert "Finished" in html
    assert "data-job-events" in html


def test_active_job_shows_lock_holder_and_ttl(dashboard_redis: Redis, viewer: Any) -> None:
    seed_job(dashboard_redis, KEYS, "7", state="active", fields={"pb": "w1"})
    dashboard_redis.set(KEYS.lock("7"), "tok-123", px=25_000)
    html = _html(viewer.get(QUEUE_URL + "job/7"))
    assert 'data-job-state="active"' in html
    assert "tok-123" in html
    # Seconds for humans, the exact milliseconds on hover.
    assert re.search(r'<span title="2\d,\d{3} ms">expires in 2\d(\.\d)? s</span>', html)


def test_job_timeline_shows_delay_and_how_long_ago_with_exact_times(
    dashboard_redis: Redis, viewer: Any
) -> None:
    now = int(time.time() * 1000)
    seed_job(
        dashboard_redis,
        KEYS,
        "t",
        state="completed",
        fields={
            "timestamp": now - 3 * 3_600_000,
            "delay": 90_000,
            "processedOn": now - 3 * 3_600_000 + 120_000,
            "finishedOn": now - 3 * 3_600_000 + 124_500,
        },
    )
    html = _html(viewer.get(QUEUE_URL + "job/t"))
    timeline = html[html.index("<h2>Timeline</h2>") : html.index("</ol>")]
    assert "3 h ago" in timeline
    assert re.search(r"Delayed</span> 1 min, until <time title=\"[^\"]+ UTC\">", timeline)
    assert "2 min after creation" in timeline
    assert "took 4.5 s" in timeline


def test_big_data_is_truncated_with_load_all(dashboard_redis: Redis, viewer: Any) -> None:
    seed_job(dashboard_redis, KEYS, "big", data={"blob": "x" * 100_000, "tail": "THE-END"})
    html = _html(viewer.get(QUEUE_URL + "job/big"))
    assert "Load all" in html
    assert "THE-END" not in html
    htmx = {"HX-Request": "true"}
    full = _html(viewer.get(QUEUE_URL + "job/big?full=1&fragment=data", headers=htmx))
    assert "THE-END" in full
    assert "<html" not in full


def test_missing_job_page_is_a_friendly_404(dashboard_redis: Redis, viewer: Any) -> None:
    seed_job(dashboard_redis, KEYS, "1")
    response = viewer.get(QUEUE_URL + "job/gone")
    assert response.status_code == 404
    assert "No job gone in emails" in response.content.decode()


def test_events_tab_newest_first_with_feed_hooks_and_filters(
    dashboard_redis: Redis, viewer: Any
) -> None:
    seed_job(dashboard_redis, KEYS, "1")
    ids = seed_events(
        dashboard_redis,
        KEYS,
        [
            ("added", {"jobId": "1", "name": "x"}),
            ("active", {"jobId": "1", "prev": "waiting"}),
            ("failed", {"jobId": "1", "failedReason": "kaput"}),
            ("added", {"jobId": "2", "name": "y"}),
        ],
    )
    html = _html(viewer.get(QUEUE_URL + "events/"))
    assert f'id="event-feed" data-last-id="{ids[-1]}"' in html
    positions = [html.index(f'data-event-id="{i}"') for i in reversed(ids)]
    assert positions == sorted(positions)
    assert "kaput" in html
    failed_only = _html(viewer.get(QUEUE_URL + "events/?type=failed"))
    assert failed_only.count("data-event-id=") == 1
    job2 = _html(viewer.get(QUEUE_URL + "events/?job=2"))
    assert job2.count("data-event-id=") == 1


def test_goto_box_jumps_to_the_job_or_explains(dashboard_redis: Redis, viewer: Any) -> None:
    seed_job(dashboard_redis, KEYS, "a b/ü")
    response = viewer.get(QUEUE_URL + "goto/", {"job": "a b/ü"})
    assert response.status_code == 302
    assert _html(viewer.get(response["Location"])).count("a b/ü") >= 1
    bad = viewer.get(QUEUE_URL + "goto/", {"job": "x:y"}, follow=True)
    assert "is not a job id" in bad.content.decode()


def test_pages_send_csp_without_inline_script_and_deny_framing(
    dashboard_redis: Redis, viewer: Any
) -> None:
    seed_job(dashboard_redis, KEYS, "1", state="failed")
    for url in ("/", QUEUE_URL, QUEUE_URL + "job/1", QUEUE_URL + "events/"):
        response = viewer.get(url)
        csp = response["Content-Security-Policy"]
        assert "script-src 'self'" in csp
        assert "unsafe-inline" not in csp
        assert response["X-Frame-Options"] == "DENY"
        html = response.content.decode()
        # Every <script> loads a file; none carries code inline.
        assert re.findall(r"<script(?![^>]*\ssrc=)[^>]*>", html) == []
        assert " style=" not in html
        assert "/static/django_htmx/htmx-2.min.js" in html


@pytest.mark.parametrize(
    ("value", "short", "exact"),
    [
        (0, "0", "0"),
        (999, "999", "999"),
        (3_200, "3.2k", "3,200"),
        (1_204_331, "1.2M", "1,204,331"),
    ],
)
def test_numbers_for_humans(value: int, short: str, exact: str) -> None:
    from dashboard.formatting import compact, thousands

    assert (compact(value), thousands(value)) == (short, exact)


def test_times_for_humans() -> None:
    from dashboard.presenters import exact_time, relative_time

    now = 1_700_000_000_000
    assert relative_time(now - 180_000, now) == "3 min ago"
    assert relative_time(now + 7_200_000, now) == "in 2 h"
    assert relative_time(now - 1_500, now) == "1.5 s ago"
    assert relative_time(now - 340, now) == "just now"
    assert relative_time("yesterday", now) == "—"
    assert exact_time(now) == "2023-11-14 22:13:20.000 UTC"
    assert exact_time(10**20) == str(10**20)


def test_json_highlighting_escapes_everything() -> None:
    from dashboard.presenters import highlight_json

    text = '{"a\\"<b>": "x</pre><script>", "n": -1.5e3, "ok": true, "none": null}'
    html = str(highlight_json(text))
    assert "<script>" not in html
    assert "</pre>" not in html
    assert '<span class="j-key">&quot;a\\&quot;&lt;b&gt;&quot;</span>:' in html
    assert '<span class="j-num">-1.5e3</span>' in html
    assert '<span class="j-lit">true</span>' in html
    assert str(highlight_json("<b>" * 30_000)).startswith("&lt;b&gt;")


def _overview_row(html: str, queue: str) -> str:
    start = html.index(f'data-queue="{queue}"')
    return html[start : html.index("</tr>", start)]


def test_overview_queue_without_metrics_says_so(dashboard_redis: Redis, viewer: Any) -> None:
    seed_job(dashboard_redis, KEYS, "w", state="wait")
    row = _overview_row(_html(viewer.get("/")), "bull:emails")
    assert "no metrics" in row
    assert "<svg" not in row


def test_overview_filter_box_is_labelled_and_has_a_no_match_message(
    dashboard_redis: Redis, viewer: Any
) -> None:
    seed_job(dashboard_redis, KEYS, "w", state="wait")
    html = _html(viewer.get("/"))
    assert re.search(r'<span class="visually-hidden">Filter queues by name</span>\s*<input', html)
    assert "data-slash-focus" in html
    assert re.search(r"<p class=\"empty\" data-filter-empty hidden>No queue name contains", html)
    # A long name is cut by CSS; the whole name is on hover.
    assert 'class="queue-name" title="bull:emails">emails</a>' in html
    # The live connection's state shows in the header (CSS reads html[data-live]).
    assert '<span class="live-status" aria-hidden="true"></span>' in html
    # On a phone each count carries its word (a CSS ::after reads data-label).
    assert 'data-label="waiting" data-count-state="wait" title="1 waiting">1<' in html
